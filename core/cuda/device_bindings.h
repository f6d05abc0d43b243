// ai3._core's calls on device memory, for tensors PyTorch keeps on a GPU.
//
// A CUDA tensor cannot be a NumPy array, so these calls take what DLPack
// would carry: the data pointer, shape, dtype, device and the caller's
// stream (torch.cuda.current_stream().cuda_stream). The output is allocated
// by the caller (torch.empty on the input's device), so no memory crosses
// to the host.
//
// Which device a new layer is built for is thread-local state the
// frontends set around construction (_core.set_layer_device): adding a
// device argument to every op's constructor would repeat it in each binding.
// Nothing here needs CUDA headers; a CPU-only build has these calls too
// (and no CUDA algorithms to run them with).
#ifndef AI3_CORE_CUDA_DEVICE_BINDINGS_H_
#define AI3_CORE_CUDA_DEVICE_BINDINGS_H_

#include <pybind11/pybind11.h>

#include "core/tensor.h"

namespace ai3 {

// The device layers built on this thread run on (kCPU unless the frontend
// set it).
Device LayerDevice();

// Adds set_layer_device, layer_device, cuda_algorithms_built,
// layer_forward_device, layer_output_shape_device (and their _n forms for
// multi-input layers) and model_forward_device to the module.
void BindDeviceCalls(pybind11::module_& m);

}  // namespace ai3

#endif  // AI3_CORE_CUDA_DEVICE_BINDINGS_H_
