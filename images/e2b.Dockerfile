# The E2B template (E2B_TEMPLATE): what an E2B VM boots, and what the E2B
# stand-in (standins/, docs/providers/e2b.md) runs each stand-in VM from.
# FROM the project image, so a project step finds the same toolchain on e2b
# as on docker, plus E2B's conventions: a `user` account (uid 1000, home
# /home/user) that commands run as by default, and the project directory
# /home/user/project. For the real service, build it with `e2b template build`
# from this file (docs/providers/e2b.md).
ARG PROJECT
FROM ${PROJECT}
LABEL io.plimsoll.role="e2b-template" \
      org.opencontainers.image.description="plimsoll E2B template: the project image plus E2B's user and project directory"
USER root
RUN useradd --create-home --uid 1000 --shell /bin/bash user \
 && install -d -o user -g user /home/user/project
ENV HOME=/home/user
WORKDIR /home/user
