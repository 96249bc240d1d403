# The Docker Cloud Sandboxes image (SANDBOX_DOCKERCLOUD_IMAGE, pushed to a
# registry and pinned by its linux/amd64 manifest digest): the project image
# with root as the image's user. Docker Cloud writes uploaded files, and runs
# an exec that names no user, as the image's user; plimsoll uploads a run's
# files, hands them to the guest with one `chown` as root, and then runs every
# guest command as 61000:61000, which each exec names. The Docker Cloud
# stand-in (standins/, docs/providers/dockercloud.md) boots this image for the
# pinned ref it is given.
ARG PROJECT
FROM ${PROJECT}
LABEL io.plimsoll.role="dockercloud" \
      org.opencontainers.image.description="plimsoll Docker Cloud image: the project image, root as the image user (guest commands run as 61000)"
USER root
