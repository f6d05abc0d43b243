// Buffer: owned, 64-byte aligned memory (weights a layer keeps, workspaces).
#ifndef AI3_CORE_BUFFER_H_
#define AI3_CORE_BUFFER_H_

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/errors.h"

namespace ai3 {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) { Resize(bytes); }

  // Grows to at least `bytes`; never shrinks, so a workspace reused across
  // calls stops allocating once it has seen the largest input.
  void Reserve(size_t bytes) {
    if (bytes > size_) Resize(bytes);
  }
  void* data() const { return data_.get(); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  void Resize(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = rounded ? std::aligned_alloc(64, rounded) : nullptr;
    if (rounded && !p) {
      Fail(ErrorKind::kInternal, "out of memory allocating ", bytes,
           " bytes");
    }
    data_.reset(p);
    size_ = bytes;
  }
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

}  // namespace ai3

#endif  // AI3_CORE_BUFFER_H_
