# The throwaway machine tests/dist/run.sh installs each artifact on: the same
# Debian base as the sandbox images plus what a *user* of plimsoll has — Python
# with venv and pip, a C compiler with pkg-config and CMake, Go (Debian trixie's)
# — and none of plimsoll's build toolchain (no Rust, no clang or wasi-libc, no
# source tree). Node is the base's (the sandbox images' Node 24 LTS); npm is
# the host's, mounted at run time.
ARG BASE
FROM ${BASE}
RUN apt-get -q update \
 && DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends \
      python3-venv python3-pip gcc libc6-dev pkg-config cmake make golang-go \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/tmp
WORKDIR /tmp
