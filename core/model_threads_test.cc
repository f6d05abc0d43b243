// One ai3::Model and one layer object called from many threads at once give
// the results of serial calls (core/graph.h and core/layer.h promise that
// concurrent calls are serialised, not raced). Meant for --config=tsan as
// much as for the plain build: ThreadSanitizer sees any access the locks
// leave unguarded, e.g. a plan or workspace rebuilt while another thread
// reads it.
//
// Each conv2d algorithm keeps its own per-layer state (packed weights,
// workspaces, oneDNN primitives), so the model is built once per algorithm.
// Threads alternate between two input shapes, so plans are rebuilt while
// other threads wait to run.
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/relu/relu.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;

constexpr int kThreads = 8;
constexpr int kCallsPerThread = 6;
constexpr int64_t kChannels = 8;

// A 3x3 convolution with bias, stride 1, padding 1: every algorithm takes it.
std::shared_ptr<Layer<Conv2dAttrs>> MakeConv(const std::string& name,
                                             const std::string& algorithm,
                                             const std::vector<float>& weight,
                                             const std::vector<float>& bias) {
  Conv2dAttrs a;
  a.in_channels = a.out_channels = kChannels;
  a.kernel_h = a.kernel_w = 3;
  a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = 1;
  a.has_bias = true;
  return std::make_shared<Layer<Conv2dAttrs>>(
      name, a,
      std::vector<Tensor>{
          Tensor{const_cast<float*>(weight.data()),
                 DType::kFloat32,
                 {kChannels, kChannels, 3, 3}},
          Tensor{
              const_cast<float*>(bias.data()), DType::kFloat32, {kChannels}}},
      algorithm);
}

// Runs body(t) on kThreads threads at once, t = 0 .. kThreads - 1, and
// checks that none raised; returns what each raised ("" for none).
std::vector<std::string> OnThreads(const std::string& tag,
                                   const std::function<void(int)>& body) {
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const Error& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    Check(errors[t].empty(),
          tag + ": thread " + std::to_string(t) + " raised: " + errors[t]);
  }
  return errors;
}

struct Case {
  Shape shape;
  std::vector<float> x;
  std::vector<float> want;  // the serial result
};

// relu(conv(relu(conv(x))) + x), one ReLU object at both places, one conv
// object at both places.
void ModelFromThreads(const std::string& algorithm) {
  const std::string tag = "model threads (" + algorithm + ")";
  const auto weight =
      testing::Cast<float>(testing::RandomVector(kChannels * kChannels * 9, 7));
  const auto bias = testing::Cast<float>(testing::RandomVector(kChannels, 8));
  auto conv = MakeConv("block.conv", algorithm, weight, bias);
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "block.relu", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model m;
  const int c1 = m.AddLayer(conv, Model::kInput);
  const int r1 = m.AddLayer(relu, c1);
  const int c2 = m.AddLayer(conv, r1);
  const int sum = m.AddAdd({c2, Model::kInput}, "block.add");
  m.AddLayer(relu, sum);

  std::vector<Case> cases;
  for (const Shape& shape :
       {Shape{2, kChannels, 9, 7}, Shape{1, kChannels, 12, 12}}) {
    Case c;
    c.shape = shape;
    c.x = testing::Cast<float>(
        testing::RandomVector(NumElements(shape), 11 + shape[2]));
    c.want.resize(c.x.size());
    m.Forward(Tensor{c.x.data(), DType::kFloat32, shape},
              Tensor{c.want.data(), DType::kFloat32, shape});
    cases.push_back(std::move(c));
  }

  // Each thread writes its own outputs; results are compared after joining.
  std::vector<std::vector<std::vector<float>>> got(
      kThreads, std::vector<std::vector<float>>(kCallsPerThread));
  const std::vector<std::string> errors = OnThreads(tag, [&](int t) {
    for (int i = 0; i < kCallsPerThread; ++i) {
      const Case& c = cases[(t + i) % cases.size()];
      got[t][i].assign(c.x.size(), -1.0f);
      m.Forward(
          Tensor{const_cast<float*>(c.x.data()), DType::kFloat32, c.shape},
          Tensor{got[t][i].data(), DType::kFloat32, c.shape});
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    if (!errors[t].empty()) continue;
    for (int i = 0; i < kCallsPerThread; ++i) {
      const Case& c = cases[(t + i) % cases.size()];
      // The same model, shape and thread count as the serial call: the same
      // arithmetic in the same order, so the same bits.
      Check(got[t][i] == c.want, tag + ": thread " + std::to_string(t) +
                                     " call " + std::to_string(i) +
                                     " differs from the serial result");
    }
  }
}

// One layer object in two models and called directly, all at once: the
// layer serialises its own calls (core/layer.h).
void SharedLayerFromThreads() {
  const std::string tag = "shared layer threads";
  const auto weight = testing::Cast<float>(
      testing::RandomVector(kChannels * kChannels * 9, 17));
  const auto bias = testing::Cast<float>(testing::RandomVector(kChannels, 18));
  auto conv = MakeConv("shared.conv", "smm", weight, bias);
  Model a, b;
  a.AddLayer(conv, Model::kInput);
  b.AddLayer(conv, Model::kInput);
  const Shape shape = {1, kChannels, 10, 10};
  const auto x =
      testing::Cast<float>(testing::RandomVector(NumElements(shape), 19));
  std::vector<float> want(x.size());
  conv->Forward(Tensor{const_cast<float*>(x.data()), DType::kFloat32, shape},
                Tensor{want.data(), DType::kFloat32, shape});

  std::vector<std::vector<float>> got(kThreads);
  OnThreads(tag, [&](int t) {
    got[t].assign(x.size(), -1.0f);
    const Tensor in{const_cast<float*>(x.data()), DType::kFloat32, shape};
    const Tensor out{got[t].data(), DType::kFloat32, shape};
    for (int i = 0; i < kCallsPerThread; ++i) {
      switch ((t + i) % 3) {
        case 0:
          a.Forward(in, out);
          break;
        case 1:
          b.Forward(in, out);
          break;
        default:
          conv->Forward(in, out);
      }
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    Check(got[t] == want, tag + ": thread " + std::to_string(t) +
                              " differs from the serial result");
  }
}

}  // namespace

int Main() {
  for (const char* algorithm : {"direct", "smm", "gemm", "implicit gemm",
                                "kn2row", "winograd", "guess"}) {
    ModelFromThreads(algorithm);
  }
  SharedLayerFromThreads();
  return testing::Summary("model threads");
}

}  // namespace ai3
