# The snippet image (SANDBOX_DOCKER_IMAGE): a JavaScript snippet is piped to
# `node -` on stdin. Built by images/build.sh FROM the debootstrapped base.
ARG BASE
FROM ${BASE}
LABEL io.plimsoll.role="snippet" \
      org.opencontainers.image.description="plimsoll snippet sandbox: Debian trixie, Node 24 LTS"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    HOME=/tmp \
    NODE_DISABLE_COLORS=1
# The host API client (clients/host.js): preloaded with `node --require` in a
# run that carries a grant, which then sees `host` as a global.
COPY clients/host.js /usr/local/lib/plimsoll/host.js
WORKDIR /tmp
USER 61000:61000
CMD ["node", "-"]
