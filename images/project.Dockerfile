# The project image (SANDBOX_DOCKER_PROJECT_IMAGE): steps run as `sh -c` in
# /work. plimsoll drives them with docker exec, and needs sh, tar, realpath,
# stat, cat and sleep (dash, GNU tar and coreutils here). Built by
# images/build.sh FROM the debootstrapped base. Derive your own from it to add a
# toolchain (docs/docker.md); runs never install anything and have no network.
ARG BASE
FROM ${BASE}
LABEL io.plimsoll.role="project" \
      org.opencontainers.image.description="plimsoll project sandbox: Debian trixie, Node 24 LTS, Python 3.13"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    HOME=/tmp \
    NODE_DISABLE_COLORS=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1
# The host API clients: `require('/usr/local/lib/plimsoll/host.js')` in Node and
# `import plimsoll_host` in Python reach a granted run's broker at $HOST_API_SOCKET.
COPY clients/host.js /usr/local/lib/plimsoll/host.js
COPY clients/plimsoll_host.py /usr/lib/python3/dist-packages/plimsoll_host.py
# No /work in the image: docker would copy the image's directory (and its
# 0755 root mode) over the run's /work tmpfs, and the guest could not write it.
WORKDIR /tmp
USER 61000:61000
CMD ["sleep", "infinity"]
