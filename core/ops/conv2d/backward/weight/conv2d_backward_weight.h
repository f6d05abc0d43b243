// conv2d_backward_weight: its Attrs are in conv2d_backward.h with its
// siblings'.
#ifndef AI3_CORE_OPS_CONV2D_BACKWARD_WEIGHT_CONV2D_BACKWARD_WEIGHT_H_
#define AI3_CORE_OPS_CONV2D_BACKWARD_WEIGHT_CONV2D_BACKWARD_WEIGHT_H_

#include "core/ops/conv2d/backward/conv2d_backward.h"

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_WEIGHT_CONV2D_BACKWARD_WEIGHT_H_
