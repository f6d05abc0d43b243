// linear_backward_bias: its Attrs are in linear_backward.h with its siblings'.
#ifndef AI3_CORE_OPS_LINEAR_BACKWARD_BIAS_LINEAR_BACKWARD_BIAS_H_
#define AI3_CORE_OPS_LINEAR_BACKWARD_BIAS_LINEAR_BACKWARD_BIAS_H_

#include "core/ops/linear/backward/linear_backward.h"

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_BIAS_LINEAR_BACKWARD_BIAS_H_
