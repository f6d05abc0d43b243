#include "core/registry.h"

#include <algorithm>

namespace ai3 {
namespace {
std::vector<std::vector<AlgorithmInfo> (*)()>& OpListers() {
  static auto* listers = new std::vector<std::vector<AlgorithmInfo> (*)()>();
  return *listers;
}
}  // namespace

namespace internal {
void AddOpLister(std::vector<AlgorithmInfo> (*lister)()) {
  OpListers().push_back(lister);
}
}  // namespace internal

std::vector<AlgorithmInfo> ListAlgorithms() {
  std::vector<AlgorithmInfo> all;
  for (auto lister : OpListers()) {
    for (AlgorithmInfo& info : lister()) all.push_back(std::move(info));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const AlgorithmInfo& a, const AlgorithmInfo& b) {
                     return a.op < b.op;
                   });
  return all;
}

}  // namespace ai3
