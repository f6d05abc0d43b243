#include "core/cuda/graph_backend.h"

namespace ai3 {
namespace {
// Indexed by Device; written at load time by static registration only.
GraphBackend* backends[2] = {nullptr, nullptr};
}  // namespace

GraphBackend* GraphBackendFor(Device device) {
  return backends[static_cast<int>(device)];
}

void RegisterGraphBackend(Device device, GraphBackend* backend) {
  backends[static_cast<int>(device)] = backend;
}

}  // namespace ai3
