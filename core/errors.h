// Errors the core raises. The core never aborts on bad input: it throws
// ai3::Error, and the Python module turns each ErrorKind into the matching
// subclass of ai3.Error (which also derives from ValueError, TypeError or
// NotImplementedError).
#ifndef AI3_CORE_ERRORS_H_
#define AI3_CORE_ERRORS_H_

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ai3 {

enum class ErrorKind {
  kInvalidArgument,   // a bad layer parameter (negative stride, bad groups)
  kShape,             // an input whose shape the layer cannot take
  kDType,             // an unsupported or mismatched dtype
  kUnknownAlgorithm,  // a name no registered algorithm has
  kAlgorithmNotApplicable,  // a known algorithm that can't take these params
  kUnsupported,             // something ai3 does not implement
  kInternal,                // a math library failed; a bug, not bad input
};

// The name of the ai3.errors class (Python) an ErrorKind becomes; every
// binding of the core (pybind11, the TensorFlow ops) uses this one table.
inline const char* ErrorClassName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kShape:
      return "ShapeError";
    case ErrorKind::kDType:
      return "DTypeError";
    case ErrorKind::kUnknownAlgorithm:
      return "UnknownAlgorithm";
    case ErrorKind::kAlgorithmNotApplicable:
      return "AlgorithmNotApplicable";
    case ErrorKind::kUnsupported:
      return "UnsupportedOperation";
    case ErrorKind::kInternal:
      break;
  }
  return "InternalError";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

  // The same error with "<context>: " in front, e.g. the layer it came from.
  Error WithContext(const std::string& context) const {
    return Error(kind_, context + ": " + what());
  }

 private:
  ErrorKind kind_;
};

namespace internal {
template <typename... Parts>
std::string Concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
}  // namespace internal

// Throws Error(kind, <parts streamed together>).
template <typename... Parts>
[[noreturn]] void Fail(ErrorKind kind, Parts&&... parts) {
  throw Error(kind, internal::Concat(std::forward<Parts>(parts)...));
}

}  // namespace ai3

#endif  // AI3_CORE_ERRORS_H_
