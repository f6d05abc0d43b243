"""Offline stand-in for @rules_cc: Bazel 4.2.3 asks for it even for a plain
cc_test and cannot download it here, so every rule forwards to native.*."""

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)

def cc_proto_library(**kwargs):
    native.cc_proto_library(**kwargs)
