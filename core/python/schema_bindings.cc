// The generic bindings of every op: ai3._core.make_layer, output_shape and
// op_schemas, all read from the ops' declarations (core/op_schema.h), so no
// binding here names an op.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/device_bindings.h"
#include "core/errors.h"
#include "core/layer.h"
#include "core/op_schema.h"
#include "core/python/arrays.h"
#include "core/tensor.h"

namespace py = pybind11;

namespace ai3 {
namespace {

// A layer's attributes by name; the typed dict makes the stubs (and so a
// type checker) say dict[str, Any] rather than a bare dict.
using AttrDict = py::typing::Dict<py::str, py::object>;

// Python's and NumPy's scalars, by kind. bool is an int in Python, but
// never meant as one here.
bool IsBool(py::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  const std::string type = py::type::of(v).attr("__name__").cast<std::string>();
  return (type == "bool_" || type == "bool") &&
         py::type::of(v).attr("__module__").cast<std::string>() == "numpy";
}

bool IsInt(py::handle v) {
  return !IsBool(v) && !PyFloat_Check(v.ptr()) &&
         (PyLong_Check(v.ptr()) || PyIndex_Check(v.ptr()));
}

bool IsFloat(py::handle v) {
  return PyFloat_Check(v.ptr()) ||
         (!IsBool(v) && !IsInt(v) && !PyUnicode_Check(v.ptr()) &&
          PyObject_HasAttrString(v.ptr(), "__float__"));
}

int64_t IntOf(py::handle v, const std::string& what) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) {
    Fail(ErrorKind::kInvalidArgument, what, " = ", std::string(py::repr(v)),
         " does not fit in 64 bits");
  }
  return value;
}

// A Python value as an AttrValue, by its own type; the op's declaration
// then checks it against the declared one (OpSchema::Resolve).
AttrValue AttrValueOf(py::handle v, const std::string& name) {
  const std::string what = "attribute '" + name + "'";
  if (v.is_none()) return {};
  if (IsBool(v)) return v.cast<bool>();
  if (IsInt(v)) return IntOf(v, what);
  if (IsFloat(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::array>(v)) {
    return AttrValueOf(v.attr("tolist")(), name);  // a list, or a 0-d scalar
  }
  if (py::isinstance<py::sequence>(v)) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool all_ints = true;
    for (py::handle item : v.cast<py::sequence>()) {
      if (IsInt(item)) {
        ints.push_back(IntOf(item, what));
        floats.push_back(static_cast<double>(ints.back()));
      } else if (IsFloat(item)) {
        all_ints = false;
        floats.push_back(item.cast<double>());
      } else {
        Fail(ErrorKind::kInvalidArgument, what, " must hold numbers only, got ",
             std::string(py::repr(v)));
      }
    }
    if (all_ints) return ints;
    return floats;
  }
  Fail(ErrorKind::kInvalidArgument, what,
       " must be a number, a bool, a string, a list of numbers or None, got ",
       std::string(py::repr(v)));
}

AttrMap AttrMapOf(const std::optional<AttrDict>& attrs) {
  AttrMap out;
  if (!attrs) return out;
  for (auto [key, value] : *attrs) {
    const std::string name = py::str(key);
    out[name] = AttrValueOf(value, name);
  }
  return out;
}

py::object ToPython(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return py::none();
        } else {
          return py::cast(v);
        }
      },
      value);
}

// weights: a dict by name, a list in declaration order (None for an absent
// optional one), or None. `slot` turns one given value into a Tensor.
template <class Slot>
WeightSlots SlotsOf(const OpSchema& schema, const py::object& weights,
                    Slot&& slot) {
  WeightSlots slots(schema.weights().size());
  if (weights.is_none()) return slots;
  auto known = [&] {
    std::string names;
    for (const WeightDecl& w : schema.weights()) {
      names += (names.empty() ? "" : ", ") + w.name;
    }
    return names.empty() ? std::string("none") : names;
  };
  if (py::isinstance<py::dict>(weights)) {
    for (auto [key, value] : weights.cast<py::dict>()) {
      const std::string name = py::str(key);
      const int k = schema.WeightIndex(name);
      if (k < 0) {
        Fail(ErrorKind::kInvalidArgument, "unknown weight '", name, "'; ",
             schema.op(), " takes ", known());
      }
      if (!value.is_none()) slots[k] = slot(value, schema.weights()[k].name);
    }
    return slots;
  }
  py::sequence list = weights.cast<py::sequence>();
  if (list.size() > slots.size()) {
    Fail(ErrorKind::kInvalidArgument, "got ", list.size(), " weights; ",
         schema.op(), " takes ", slots.size(), ": ", known());
  }
  for (size_t k = 0; k < list.size(); ++k) {
    if (!list[k].is_none()) slots[k] = slot(list[k], schema.weights()[k].name);
  }
  return slots;
}

Device DeviceOf(const std::optional<std::string>& device) {
  if (!device) return LayerDevice();  // the thread's (ai3.cuda.layer_device)
  if (*device == "cpu") return Device::kCPU;
  if (*device == "cuda") return Device::kCUDA;
  Fail(ErrorKind::kInvalidArgument, "device must be 'cpu' or 'cuda', got '",
       *device, "'");
}

// Runs `fn`; an error it raises before the layer exists gets the layer's
// context (the layer's own errors carry it already).
template <class Fn>
auto Named(const std::string& op, const std::string& name, Fn&& fn) {
  const std::string context = internal::LayerContext(op, name);
  try {
    return fn();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(context, 0) == 0) throw;
    throw e.WithContext(context);
  }
}

// What make_layer and check_algorithm read from Python: the attributes,
// the weight slots and the device, parsed under the layer's name so that
// their errors name it. `slot_of()` gives the function that turns one given
// weight into a Tensor (called inside, so that what it parses is named too).
struct LayerRequest {
  AttrMap attrs;
  WeightSlots slots;
  Device device = Device::kCPU;
};
template <class SlotOf>
LayerRequest RequestOf(const OpSchema& schema, const std::string& name,
                       const std::optional<AttrDict>& attrs,
                       const py::object& weights,
                       const std::optional<std::string>& device,
                       SlotOf&& slot_of) {
  LayerRequest request;
  Named(schema.op(), name, [&] {
    request.attrs = AttrMapOf(attrs);
    request.device = DeviceOf(device);
    request.slots = SlotsOf(schema, weights, slot_of());
    return 0;
  });
  return request;
}

// A weight of a shape only, for queries that read no weight: a Tensor of
// that shape and `type`, with no data.
auto Probe(DType type) {
  return [type](py::handle v, const std::string&) {
    Tensor probe;  // a shape and a dtype: nothing is read or copied
    probe.shape = v.cast<std::vector<int64_t>>();
    probe.dtype = type;
    return probe;
  };
}

std::shared_ptr<AnyLayer> MakeLayer(const std::string& op,
                                    const std::optional<AttrDict>& attrs,
                                    const py::object& weights,
                                    const std::string& algorithm,
                                    const std::string& name,
                                    const std::optional<std::string>& device) {
  const OpSchema& schema = GetOpSchema(op);
  std::vector<py::array> keep;  // the arrays the tensors view, while copied
  const LayerRequest request =
      RequestOf(schema, name, attrs, weights, device, [&] {
        return [&](py::handle v, const std::string& w) {
          keep.push_back(py::array::ensure(v));
          if (!keep.back()) {
            Fail(ErrorKind::kInvalidArgument, "weight ", w,
                 " must be a NumPy array, got ", std::string(py::repr(v)));
          }
          return TensorOf(keep.back(), w.c_str());
        };
      });
  // Weights come as host arrays; a CUDA layer copies them to its GPU.
  return schema.MakeLayer(name, request.attrs, request.slots, algorithm,
                          request.device);
}

void CheckAlgorithm(const std::string& op, const std::string& algorithm,
                    const std::optional<AttrDict>& attrs,
                    const py::object& weight_shapes, const std::string& dtype,
                    const std::string& name,
                    const std::optional<std::string>& device) {
  const OpSchema& schema = GetOpSchema(op);
  const LayerRequest request =
      RequestOf(schema, name, attrs, weight_shapes, device,
                [&] { return Probe(ParseDType(dtype)); });
  schema.CheckAlgorithm(name, request.attrs, request.slots, algorithm,
                        request.device);
}

std::vector<int64_t> OutputShape(
    const std::string& op, const std::optional<AttrDict>& attrs,
    const py::object& weight_shapes,
    const std::vector<std::vector<int64_t>>& input_shapes,
    const py::object& dtype, const std::string& name) {
  const OpSchema& schema = GetOpSchema(op);
  WeightSlots slots;
  AttrMap attr_map;
  std::vector<Tensor> inputs(input_shapes.size());
  Named(op, name, [&] {
    // One dtype name for everything, or one per input (int64 indices
    // beside float data); with a list, weights take the first float dtype
    // in it (float32 if none): a table gathered by int64 ids is float.
    const bool one = py::isinstance<py::str>(dtype);
    const std::vector<DType> types = ParseDTypes(dtype, inputs.size());
    DType type = one ? ParseDType(dtype.cast<std::string>()) : DType::kFloat32;
    for (size_t k = 0; !one && k < types.size(); ++k) {
      if (IsFloat(types[k])) {
        type = types[k];
        break;
      }
    }
    if (types.size() != inputs.size()) {
      Fail(ErrorKind::kInvalidArgument, "got ", inputs.size(),
           " input shapes but ", types.size(), " dtypes");
    }
    attr_map = AttrMapOf(attrs);
    slots = SlotsOf(schema, weight_shapes, Probe(type));
    // The layout the layer would give its inputs (image ops say theirs).
    Layout layout = Layout::kNCHW;
    auto it = attr_map.find("layout");
    if (it != attr_map.end() &&
        std::holds_alternative<std::string>(it->second) &&
        std::get<std::string>(it->second) == "NHWC") {
      layout = Layout::kNHWC;
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      inputs[k].shape = input_shapes[k];
      inputs[k].dtype = types[k];
      inputs[k].layout = layout;
    }
    return 0;
  });
  return schema.OutputShape(name, attr_map, slots, inputs);
}

py::dict SchemaDict(const OpSchema& s) {
  py::list attrs;
  for (const AttrDecl& a : s.attrs()) {
    py::dict d;
    d["name"] = a.name;
    d["type"] = Name(a.type);
    d["required"] = internal::IsNone(a.default_value) && !a.nullable;
    d["default"] = ToPython(a.default_value);
    d["nullable"] = a.nullable;
    d["size"] = a.size;
    d["choices"] = a.choices;
    d["doc"] = a.doc;
    attrs.append(d);
  }
  py::list weights;
  for (const WeightDecl& w : s.weights()) {
    py::dict d;
    d["name"] = w.name;
    d["optional"] = w.optional;
    d["doc"] = w.doc;
    weights.append(d);
  }
  py::dict defaults;
  for (Device device : {Device::kCPU, Device::kCUDA}) {
    py::list order;
    for (const DefaultEntry& e : s.DefaultOrder(device)) {
      order.append(py::make_tuple(e.algorithm, e.condition));
    }
    if (py::len(order)) defaults[Name(device)] = order;
  }
  py::dict out;
  out["op"] = s.op();
  out["doc"] = s.doc();
  out["multi_input"] = s.multi_input();
  out["attrs"] = attrs;
  out["weights"] = weights;
  out["default"] = defaults;
  return out;
}

}  // namespace

void BindSchemas(py::module_& m) {
  m.def("make_layer", &MakeLayer, py::arg("op"), py::arg("attrs") = py::none(),
        py::arg("weights") = py::none(), py::arg("algorithm") = "default",
        py::arg("name") = "", py::arg("device") = py::none(),
        "A layer of `op` (see op_schemas()): attrs by name, weights as a "
        "dict by name or a list in the declared order (None for an absent "
        "optional one), NumPy arrays copied into the layer. `device` None: "
        "the thread's layer device (ai3.cuda.layer_device). Errors name the "
        "op, the layer and what is wrong.");
  m.def("check_algorithm", &CheckAlgorithm, py::arg("op"), py::arg("algorithm"),
        py::arg("attrs") = py::none(), py::arg("weight_shapes") = py::none(),
        py::arg("dtype") = "float32", py::arg("name") = "",
        py::arg("device") = py::none(),
        "Raises what make_layer would for a layer of `op` with these "
        "attributes, weights of these shapes (a dict or list as make_layer's "
        "weights) and `algorithm` (an unknown name, one that cannot take the "
        "layer, an invalid attribute or shape); returns None if it would "
        "build. No weight is copied and no kernel prepared.");
  m.def("output_shape", &OutputShape, py::arg("op"),
        py::arg("attrs") = py::none(), py::arg("weight_shapes") = py::none(),
        py::arg("input_shapes") = std::vector<std::vector<int64_t>>{},
        py::arg("dtype") = "float32", py::arg("name") = "",
        "The output shape a layer of `op` with these attributes and weights "
        "of these shapes (a dict or list as make_layer's weights) gives for "
        "inputs of these shapes, through the op's own validation and shape "
        "rule; no kernel is built and nothing is copied.");
  m.def(
      "op_schemas",
      [] {
        py::typing::List<AttrDict> out;
        for (const OpSchema* s : AllOpSchemas()) out.append(SchemaDict(*s));
        return out;
      },
      "Every op's declaration: op, doc, multi_input, attrs (name, type, "
      "required, default, nullable, size, choices, doc), weights (name, "
      "optional, doc) and default (device -> [(algorithm, condition)], in "
      "order).");
}

}  // namespace ai3
