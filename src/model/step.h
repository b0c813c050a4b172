/* step.h: torch.profiler's iterations as the analysis tools find them: the ranges named
 * "ProfilerStep#N" that profile.step() opens on the CPU. */
#ifndef STROBE_MODEL_STEP_H
#define STROBE_MODEL_STEP_H

#include <stdint.h>

#include "model.h"

/* Whether `name` is a step's name, "ProfilerStep#N" (HTA's pattern: "ProfilerStep", optional
 * spaces, "#", optional spaces, decimal digits; what follows is not looked at). @return 1 with
 * *n set, or 0. */
int md_step_number(const char *name, int64_t *n);

/* Whether event e is a step range: a timed, well-formed CPU operator or user annotation (not a
 * gpu_user_annotation: Kineto copies the step's range onto the device streams) with a step name.
 * @return 1 with *n set, or 0. */
int md_is_step(const md_model *m, const md_event *e, int64_t *n);

#endif
