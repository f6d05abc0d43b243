// linear_backward_weight: its Attrs are in linear_backward.h with its
// siblings'.
#ifndef AI3_CORE_OPS_LINEAR_BACKWARD_WEIGHT_LINEAR_BACKWARD_WEIGHT_H_
#define AI3_CORE_OPS_LINEAR_BACKWARD_WEIGHT_LINEAR_BACKWARD_WEIGHT_H_

#include "core/ops/linear/backward/linear_backward.h"

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_WEIGHT_LINEAR_BACKWARD_WEIGHT_H_
