"""torch_workload.py: the PyTorch program of test_record_torch.sh: forward, backward and optimizer
steps of a small model, record_function ranges, a second thread with ops of its own, and a
DataLoader with 2 worker processes (fork). Everything the comparison counts runs on the main
thread inside the record_function range "workload".

    torch_workload.py plain                  runs it (under strobe record --torch)
    torch_workload.py profile OUT.json       runs it under torch.profiler (record_shapes,
                                             profile_memory) and writes key_averages()'s names and
                                             counts, of the main thread's events inside
                                             "workload" (torch's own, its own ranges), as
                                             {"name": count}
    torch_workload.py steps                  a loop that calls torch.profiler.profile().step()
                                             (ProfilerStep#N ranges), without the rest
"""
import json
import sys
import threading

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        # Ops in the worker processes (their own parts of the merged trace).
        x = torch.full((4,), float(i))
        return x * x, torch.tensor(float(i))


def side_thread():
    a = torch.ones(16, 16)
    for _ in range(5):
        with torch.autograd.profiler.record_function("side_thread_work"):
            a = torch.tanh(a @ a)


def workload():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Squares(), batch_size=2, num_workers=2,
                        multiprocessing_context="fork")
    t = threading.Thread(target=side_thread)
    t.start()
    t.join()
    for x, y in loader:
        with torch.autograd.profiler.record_function("train_step"):
            opt.zero_grad()
            out = model(x).squeeze(1)
            loss = torch.nn.functional.mse_loss(out, y)
            loss.backward()
            opt.step()


def run():
    with torch.autograd.profiler.record_function("workload"):
        workload()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
    if mode == "plain":
        run()
    elif mode == "profile":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    record_shapes=True, profile_memory=True) as prof:
            run()
        # record_function makes its handle (aten::zeros ...) before its range begins: the
        # events inside "workload" are compared, here as in strobe's trace, not the profiler's
        # whole span.
        from torch.autograd.profiler_util import EventList

        events = prof.events()
        w = [e for e in events if e.name == "workload"][0]
        inside = EventList([e for e in events if e.thread == w.thread and
                            w.time_range.start <= e.time_range.start and
                            e.time_range.end <= w.time_range.end])
        inside._tree_built = True  # the events come from the profiler's built tree
        counts = {}
        for e in inside.key_averages():
            counts[e.key] = counts.get(e.key, 0) + e.count
        with open(sys.argv[2], "w") as f:
            json.dump(counts, f, indent=1, sort_keys=True)
    elif mode == "steps":
        a = torch.ones(32, 32)
        # torch 1.13 records ProfilerStep#N only with a schedule.
        sched = torch.profiler.schedule(wait=0, warmup=0, active=10)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    schedule=sched) as prof:
            for _ in range(4):
                a = torch.relu(a @ a) / 32
                prof.step()
    else:
        sys.exit("usage: torch_workload.py plain | profile OUT.json | steps")


if __name__ == "__main__":
    main()
