"""Packaging: the repository's top-level folders install under the ``vdla`` namespace.

``compiler/`` installs as ``vdla.compiler``, ``runtime/`` as ``vdla.runtime`` (and ``simulator``,
``fuzz``, ``fpga_scripts`` alike), so installing VDLA claims only the import names ``vdla`` and
``vdla_hw``. Metadata, dependencies and package data are in pyproject.toml.
"""

from setuptools import find_packages, setup

NAMESPACED = ("compiler", "runtime", "simulator", "fuzz", "fpga_scripts")

if __name__ == "__main__":
    found = find_packages(include=["vdla", "vdla.*", "vdla_hw", "vdla_hw.*",
                                   *(p for top in NAMESPACED for p in (top, f"{top}.*"))])
    packages = [f"vdla.{p}" if p.split(".")[0] in NAMESPACED else p for p in found]
    setup(packages=packages, package_dir={f"vdla.{top}": top for top in NAMESPACED})
