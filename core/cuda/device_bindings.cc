#include "core/cuda/device_bindings.h"

#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/registry.h"

namespace py = pybind11;

namespace ai3 {
namespace {

thread_local Device layer_device = Device::kCPU;

Device ParseDevice(const std::string& device) {
  if (device == "cpu") return Device::kCPU;
  if (device == "cuda") return Device::kCUDA;
  Fail(ErrorKind::kInvalidArgument, "device must be 'cpu' or 'cuda', got '",
       device, "'");
}

DType ParseDType(const std::string& dtype) {
  if (dtype == "float32") return DType::kFloat32;
  if (dtype == "float64") return DType::kFloat64;
  Fail(ErrorKind::kDType, "dtype must be 'float32' or 'float64', got '", dtype,
       "'");
}

// A contiguous tensor on `device` at `pointer` (an integer from Python).
Tensor DeviceTensor(uintptr_t pointer, const std::vector<int64_t>& shape,
                    const std::string& dtype, const std::string& device,
                    int index, uintptr_t stream, Layout layout) {
  Tensor t;
  t.data = reinterpret_cast<void*>(pointer);
  t.shape = shape;
  t.dtype = ParseDType(dtype);
  t.device = ParseDevice(device);
  t.device_index = index;
  t.stream = reinterpret_cast<void*>(stream);
  t.layout = layout;
  return t;
}

// layer_output_shape_device(_n): the shape query of any layer, through its
// N-input form (which a single-input layer takes with one input).
Shape OutputShapeDevice(const AnyLayer& layer,
                        const std::vector<std::vector<int64_t>>& shapes,
                        const std::string& dtype, const std::string& device,
                        int index) {
  std::vector<Tensor> probes;
  for (const auto& shape : shapes) {
    probes.push_back(
        DeviceTensor(0, shape, dtype, device, index, 0, layer.layout()));
  }
  return layer.OutputShape(probes);
}

// layer_forward_device(_n): runs any layer on device tensors, one pointer
// and shape per input, without the GIL.
void ForwardDevice(AnyLayer& layer, const std::vector<uintptr_t>& xs,
                   const std::vector<std::vector<int64_t>>& shapes, uintptr_t y,
                   const std::vector<int64_t>& y_shape,
                   const std::string& dtype, const std::string& device,
                   int index, uintptr_t stream) {
  if (xs.size() != shapes.size()) {
    Fail(ErrorKind::kInvalidArgument, "got ", xs.size(), " input pointers but ",
         shapes.size(), " shapes");
  }
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < xs.size(); ++k) {
    inputs.push_back(DeviceTensor(xs[k], shapes[k], dtype, device, index,
                                  stream, layer.layout()));
  }
  Tensor output =
      DeviceTensor(y, y_shape, dtype, device, index, stream, layer.layout());
  py::gil_scoped_release release;
  layer.Forward(inputs, output);
}

bool CudaAlgorithmsBuilt() {
  for (const AlgorithmInfo& info : ListAlgorithms()) {
    if (info.device == Device::kCUDA) return true;
  }
  return false;
}

}  // namespace

Device LayerDevice() { return layer_device; }

void BindDeviceCalls(py::module_& m) {
  m.def(
      "set_layer_device",
      [](const std::string& device) {
        const Device previous = layer_device;
        layer_device = ParseDevice(device);
        return std::string(Name(previous));
      },
      py::arg("device"),
      "Sets the device ('cpu' or 'cuda') layers built on this thread run "
      "on, and returns the previous one. CUDA layers are prepared on the "
      "current CUDA device.");
  m.def(
      "layer_device", [] { return std::string(Name(layer_device)); },
      "The device layers built on this thread run on.");
  m.def("cuda_algorithms_built", &CudaAlgorithmsBuilt,
        "Whether this build has CUDA algorithms (built with --config=cuda).");
  m.def(
      "layer_output_shape_device",
      [](const AnyLayer& layer, const std::vector<int64_t>& shape,
         const std::string& dtype, const std::string& device, int index) {
        return OutputShapeDevice(layer, {shape}, dtype, device, index);
      },
      py::arg("layer"), py::arg("shape"), py::arg("dtype"), py::arg("device"),
      py::arg("index") = 0,
      "The output shape of `layer` for an input of this shape on `device`.");
  m.def(
      "layer_forward_device",
      [](AnyLayer& layer, uintptr_t x, const std::vector<int64_t>& x_shape,
         uintptr_t y, const std::vector<int64_t>& y_shape,
         const std::string& dtype, const std::string& device, int index,
         uintptr_t stream) {
        ForwardDevice(layer, {x}, {x_shape}, y, y_shape, dtype, device, index,
                      stream);
      },
      py::arg("layer"), py::arg("x"), py::arg("x_shape"), py::arg("y"),
      py::arg("y_shape"), py::arg("dtype"), py::arg("device"), py::arg("index"),
      py::arg("stream"),
      "Runs `layer` on the contiguous device tensor at pointer x into the "
      "one at y (of layer_output_shape_device), queued on `stream` (a "
      "cudaStream_t as an int; 0 is the default stream). Does not wait.");
  // The same for multi-input layers (add, matmul, ...): one pointer and
  // shape per input.
  m.def("layer_output_shape_device_n", &OutputShapeDevice, py::arg("layer"),
        py::arg("shapes"), py::arg("dtype"), py::arg("device"),
        py::arg("index") = 0);
  m.def("layer_forward_device_n", &ForwardDevice, py::arg("layer"),
        py::arg("xs"), py::arg("shapes"), py::arg("y"), py::arg("y_shape"),
        py::arg("dtype"), py::arg("device"), py::arg("index"),
        py::arg("stream"));
  m.def(
      "model_forward_device",
      [](Model& model, uintptr_t x, const std::vector<int64_t>& x_shape,
         const std::string& dtype, const std::string& device, int index,
         uintptr_t stream,
         const py::typing::Callable<uintptr_t(Shape)>& allocate) {
        Tensor input = DeviceTensor(x, x_shape, dtype, device, index, stream,
                                    Layout::kNCHW);
        Shape output_shape;
        {
          py::gil_scoped_release release;
          output_shape = model.Prepare(input);
        }
        // The caller allocates the output on the input's device (e.g.
        // torch.empty), so the result is its framework's tensor.
        uintptr_t y = allocate(output_shape).cast<uintptr_t>();
        Tensor output = DeviceTensor(y, output_shape, dtype, device, index,
                                     stream, Layout::kNCHW);
        py::gil_scoped_release release;
        model.Forward(input, output);
      },
      py::arg("model"), py::arg("x"), py::arg("x_shape"), py::arg("dtype"),
      py::arg("device"), py::arg("index"), py::arg("stream"),
      py::arg("allocate"),
      "Runs a whole Model on a device tensor: allocate(output_shape) must "
      "return the pointer of a contiguous output on the same device.");
}

}  // namespace ai3
