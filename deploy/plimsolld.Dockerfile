# plimsolld itself as a container image, built locally FROM the same
# debootstrapped Debian base as the sandbox images (no registry):
#
#   bash deploy/build-image.sh            # → plimsoll/plimsolld:<version> and :latest
#
# The binary is copied in, built outside by deploy/build-image.sh (release
# profile; the wasm guest and webpki roots are compiled into it, so the image
# needs no toolchain, no CA bundle and no package manager run).
#
#   docker run -d -p 127.0.0.1:8746:8746 -e SANDBOX_PROVIDER=wasm \
#     -e PLIMSOLL_TOKEN=… plimsoll/plimsolld
#
# With SANDBOX_PROVIDER unset it serves the disabled provider: nothing runs.
# For the docker provider the daemon needs the host's docker socket, which is
# root on that host in all but name — see docs/operations.md, "The container
# image", before you mount it.
ARG BASE
FROM ${BASE}
ARG VERSION=0.0.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="plimsolld" \
      org.opencontainers.image.description="plimsoll daemon: runs code nobody trusts behind a proven isolation tier" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.plimsoll.role="daemon"
COPY plimsolld /usr/local/bin/plimsolld
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PLIMSOLL_ADDR=0.0.0.0:8746 \
    PLIMSOLL_LOG_FORMAT=json
EXPOSE 8746
# An unprivileged user of its own; the docker provider adds the socket's group
# at run time (`--group-add "$(stat -c %g /var/run/docker.sock)"`).
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/plimsolld"]
