"""setup.py — only marks the wheel as platform-specific: it bundles steno/_native/libsteno.so.3
(a Linux shared library, loaded with ctypes, so any Python 3 can use it: tag py3-none-<platform>).
Everything else is in pyproject.toml. Build with scripts/build_wheel.sh."""

from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


class BDistWheel(bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": BDistWheel})
