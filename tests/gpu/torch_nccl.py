#!/usr/bin/env python3
"""torch_nccl.py: a one-GPU torch.distributed job on the NCCL backend (world size 1), for
strobe record's NCCL profiler plugin on a real driver: a few all_reduce calls and a barrier.
Exit 77 when torch has no CUDA device or no NCCL."""
import os
import sys

import torch
import torch.distributed as dist

if not torch.cuda.is_available() or not dist.is_nccl_available():
    print("SKIP: no CUDA device or no NCCL in torch %s" % torch.__version__)
    sys.exit(77)
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
dist.init_process_group("nccl", rank=0, world_size=1)
t = torch.ones(1 << 20, device="cuda")
for _ in range(5):
    dist.all_reduce(t)
dist.barrier()
torch.cuda.synchronize()
assert float(t[0]) == 1.0
dist.destroy_process_group()
print("torch_nccl: 5 all_reduce calls done")
