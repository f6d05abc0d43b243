"""The ai3._core extension module, parameterised by its custom algorithms."""

def ai3_extension(name, custom_algos = "//custom_algos", **kwargs):
    """A `_core.so` Python extension: the core, its bindings, and `custom_algos`.

    The shared object finds the math libraries next to itself first ($ORIGIN:
    the wheel ships them there) and then on the system.
    """
    native.cc_binary(
        name = name,
        linkshared = 1,
        # DT_RPATH rather than RUNPATH: it also applies to the bundled
        # libraries' own dependencies (OpenBLAS -> libgfortran).
        linkopts = ["-Wl,-rpath,$$ORIGIN", "-Wl,--disable-new-dtags"],
        deps = [
            "//core/python:bindings",
            custom_algos,
        ],
        **kwargs
    )
