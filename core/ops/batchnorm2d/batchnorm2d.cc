#include "core/ops/batchnorm2d/batchnorm2d.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/math/dispatch.h"

namespace ai3 {

void BatchNorm2dAttrs::Validate(const std::vector<Tensor>& params) const {
  if (channels < 1) {
    Fail(ErrorKind::kInvalidArgument, "channels must be >= 1, got ", channels);
  }
  if (!(eps >= 0) || !std::isfinite(eps)) {
    Fail(ErrorKind::kInvalidArgument, "eps must be finite and >= 0, got ", eps);
  }
  if (std::string why = activation.WhyInvalid(); !why.empty()) {
    Fail(ErrorKind::kInvalidArgument, why);
  }
  if (params.size() != 4) {
    Fail(ErrorKind::kInvalidArgument,
         "expected 4 parameter tensors (weight, bias, running_mean, "
         "running_var), got ",
         params.size());
  }
  static const char* const kNames[] = {"weight", "bias", "running_mean",
                                       "running_var"};
  for (int i = 0; i < 4; ++i) {
    if (params[i].shape != Shape{channels}) {
      Fail(ErrorKind::kShape, kNames[i], " has shape ",
           ToString(params[i].shape), ", expected (", channels, ",)");
    }
    if (params[i].dtype != dtype) {
      Fail(ErrorKind::kDType, kNames[i], " is ", Name(params[i].dtype),
           ", layer is ", Name(dtype));
    }
  }
}

void BatchNorm2dAttrs::ValidateWithoutActivation(
    const std::vector<Tensor>& params) const {
  Validate(params);
  if (activation.enabled) {
    Fail(ErrorKind::kInvalidArgument,
         "the batchnorm2d gradients take no fused activation (got ",
         ActivationFnName(activation.fn), " clamped to [", activation.min, ", ",
         activation.max, "]); run the activation as its own layer");
  }
}

Shape BatchNorm2dAttrs::OutputShape(const Tensor& input) const {
  // Rank 4, and any other rank >= 2 as ChannelDims reads it: BatchNorm1d's
  // (N, C) and (N, C, L), BatchNorm3d's (N, C, D, H, W).
  if (input.rank() < 2) {
    Fail(ErrorKind::kShape, "expected an input of rank 2 or more (",
         layout == Layout::kNHWC ? "channels last" : "channels at dim 1",
         "), got rank ", input.rank(), " ", ToString(input.shape));
  }
  if (input.dtype != dtype) {
    Fail(ErrorKind::kDType, "input is ", Name(input.dtype), " but weights are ",
         Name(dtype));
  }
  CheckShape(input.shape, "input");
  ImageDims in = ChannelDims(input.shape, layout);
  if (in.c != channels) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", in.c, " channels, the layer expects ", channels);
  }
  return input.shape;
}

Buffer BatchNorm2dAttrs::FoldScaleShift(
    const std::vector<Tensor>& params) const {
  Buffer folded(2 * channels * SizeOf(dtype));
  DispatchFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gamma = params[kWeight].data_as<const T>();
    const T* beta = params[kBias].data_as<const T>();
    const T* mean = params[kRunningMean].data_as<const T>();
    const T* var = params[kRunningVar].data_as<const T>();
    T* scale = folded.as<T>();
    T* shift = scale + channels;
    for (int64_t k = 0; k < channels; ++k) {
      const double s = double(gamma[k]) / std::sqrt(double(var[k]) + eps);
      scale[k] = static_cast<T>(s);
      shift[k] = static_cast<T>(double(beta[k]) - double(mean[k]) * s);
    }
  });
  return folded;
}

}  // namespace ai3
