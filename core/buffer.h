// Buffer: owned, 64-byte aligned memory (weights a layer keeps, workspaces,
// a Model's activations).
#ifndef AI3_CORE_BUFFER_H_
#define AI3_CORE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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
    const bool huge = bytes >= kHugePage &&
                      bytes <= std::numeric_limits<size_t>::max() - kHugePage;
    const size_t align = huge ? kHugePage : 64;
    const size_t rounded = (bytes + align - 1) / align * align;
    void* p = rounded ? std::aligned_alloc(align, rounded) : nullptr;
    if (rounded && !p) {
      Fail(ErrorKind::kInternal, "out of memory allocating ", bytes, " bytes");
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Only a hint: where the kernel has no transparent huge pages the buffer
    // keeps its 4 KiB pages, and the call's failure changes nothing.
    if (huge) madvise(p, rounded, MADV_HUGEPAGE);
#endif
    data_.reset(p);
    size_ = bytes;
  }
  // Buffers this large start on a 2 MiB boundary, span whole 2 MiB pages
  // and ask Linux for transparent huge pages (madvise; in the kernel's usual
  // THP mode, "madvise", no allocation gets them without asking). A Model's
  // activations and workspaces are walked end to end every forward, after
  // other layers' data has evicted them from the caches; on 4 KiB pages
  // that walk leaves the TLB's reach (the likely cause: TLB misses were not
  // counted). DenseNet-121 at batch 1 on the 2-core EPYC (Zen 4), 2
  // threads, ai3 against ONNX Runtime in one process (three rounds of
  // alternating blocks): 27.8-28.2 ms before, 25.1-25.3 after, ONNX Runtime
  // 30.0-30.4 in both. Weights (many buffers under
  // 2 MiB) gained nothing measurable on huge pages (glibc's
  // malloc.hugetlb=1 tunable, which asks for every allocation). The cost:
  // a huge page is backed whole once touched, so a buffer uses up to 2 MiB
  // more memory than it holds (at most twice its size, just over 2 MiB).
  static constexpr size_t kHugePage = size_t{2} << 20;
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
