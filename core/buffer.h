// Buffer: owned, 64-byte aligned memory (weights a layer keeps, workspaces).
#ifndef AI3_CORE_BUFFER_H_
#define AI3_CORE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
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
    // Rounding a size near SIZE_MAX up would wrap to 0, and a null buffer
    // recorded as `bytes` long would then be written through.
    if (bytes > std::numeric_limits<size_t>::max() - 63) {
      Fail(ErrorKind::kInvalidArgument, "cannot allocate ", bytes,
           " bytes: more than the address space");
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = rounded ? std::aligned_alloc(64, rounded) : nullptr;
    if (rounded && !p) {
      Fail(ErrorKind::kInternal, "out of memory allocating ", bytes, " bytes");
    }
    data_.reset(p);
    size_ = bytes;
  }
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

// The size in bytes of `elements` items of `item_bytes` each, for sizing a
// Buffer from a tensor's element count: throws kInvalidArgument (naming
// `what`) if the count is negative or the product does not fit a size_t,
// where the plain product would wrap to a small buffer and the copy into it
// would overrun.
inline size_t CheckedBytes(int64_t elements, size_t item_bytes,
                           const char* what) {
  if (elements < 0) {
    Fail(ErrorKind::kInvalidArgument, what, " has a negative element count (",
         elements, ")");
  }
  const size_t n = static_cast<size_t>(elements);
  if (item_bytes != 0 && n > std::numeric_limits<size_t>::max() / item_bytes) {
    Fail(ErrorKind::kInvalidArgument, what, " has ", elements, " elements of ",
         item_bytes, " bytes: more than the address space");
  }
  return n * item_bytes;
}

}  // namespace ai3

#endif  // AI3_CORE_BUFFER_H_
