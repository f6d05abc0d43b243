// linear_backward_data: its Attrs are in linear_backward.h with its siblings'.
#ifndef AI3_CORE_OPS_LINEAR_BACKWARD_DATA_LINEAR_BACKWARD_DATA_H_
#define AI3_CORE_OPS_LINEAR_BACKWARD_DATA_LINEAR_BACKWARD_DATA_H_

#include "core/ops/linear/backward/linear_backward.h"

#endif  // AI3_CORE_OPS_LINEAR_BACKWARD_DATA_LINEAR_BACKWARD_DATA_H_
