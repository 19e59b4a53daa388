# rev88-bundle images. Three final targets:
#
#   verify    offline verifier (numpy, mpmath, typer, rich; no torch, no GPU), ENTRYPOINT rev88 verify
#   gpu       the measuring side: Debian 12, Python 3.11 (Debian's), torch 2.5.1 with its CUDA 12.4
#             runtime wheels, numpy 2.2.6, nvidia-ml-py 12.560.30, NVIDIA's ncu_report reader,
#             Nsight Compute (default 2024.1.1 from Debian's non-free archive), the bundle package
#   gpu-test  gpu plus the test runner (pytest, matplotlib, docker SDK) kept outside its venv
#
# Everything comes from two places only: Debian's archive (through the base image's own apt
# sources) and the Python package index pip is configured with. Every Python package is pinned
# by sha256 in docker/requirements-gpu.lock / requirements-gpu-test.lock (written by
# scripts/lock_image_requirements.py) and installed with --require-hashes; the Nsight Compute
# .deb files are pinned by sha256 below.
#
# The verify stages come FIRST: the legacy builder (DOCKER_BUILDKIT=0) builds every stage that
# precedes --target. No "# syntax=" line: it would pull a frontend image.
#
# Base images are build arguments pinned by digest; override them to build from a local base
# (CI: `--build-arg VERIFY_BASE_IMAGE=local/bookworm-base --build-arg GPU_BASE_IMAGE=local/bookworm-base`,
# a debootstrap bookworm minbase).
#   VERIFY_BASE_IMAGE: python:3.11-slim-bookworm, digest a36c24f9... is one published digest of
#     that tag (recorded 2026-11-30; not re-checked from our CI, which reaches no registry).
#   GPU_BASE_IMAGE: debian:bookworm-slim, digest 3783cc01... is one published digest of that tag,
#     as seen in a public build log (recorded 2026-12-01; not re-checked from our CI).
#
# Extra CA: files *.crt / *.pem in docker/extra-ca/ (normally none) are joined into one bundle used
# as PIP_CERT / SSL_CERT_FILE in the BUILD stages only; the final stages copy nothing from there.
# Put a complete PEM bundle there (e.g. the host's /etc/ssl/certs/ca-certificates.crt) when a
# TLS-intercepting proxy sits between the build and the package index.
#
# MNIST: the four official .gz files (data/mnist, 11 MB, sha256-pinned in protocol/data.py) are
# copied into the images at /opt/rev88/data/mnist (REV88_RAW_DIR), and the frozen reference (the
# original study's JSON evidence, <1 MB) at /opt/rev88/evidence/rev88-original (REV88_ORIGINAL_DIR).
# Run archives are NOT in the images: they are mounted (read-only for verify).

ARG VERIFY_BASE_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG GPU_BASE_IMAGE=debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251

# ---------------------------------------------------------------------------------------------
# verify-base: a Python 3.11 with venv. The pinned base already has it; a bare Debian bookworm
# (CI's debootstrap base) gets Debian's python3 3.11.2 from apt (plain HTTP, no CA needed).
FROM ${VERIFY_BASE_IMAGE} AS verify-base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN if ! command -v python3 >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3-venv=3.11.2-1+b1 \
        && apt-get clean \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -c 'import sys, venv; assert sys.version_info[:2] == (3, 11), sys.version' \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin rev88

# verify-build: the venv, with the extra CA available to pip (this stage is never shipped).
FROM verify-base AS verify-build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY docker/extra-ca/ /tmp/extra-ca/
COPY docker/requirements-verify.txt /tmp/requirements-verify.txt
COPY pyproject.toml /src/pyproject.toml
COPY bundle /src/bundle
COPY verify /src/verify
COPY protocol /src/protocol
RUN find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + \
        > /tmp/ca-bundle.pem \
    && if [ -s /tmp/ca-bundle.pem ]; then export PIP_CERT=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; fi \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --require-hashes \
        -r /tmp/requirements-verify.txt \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --no-deps --no-build-isolation /src \
    && /opt/venv/bin/python -c 'import bundle.cli, verify, protocol.hostrefs'

# verify: the offline verifier. Non-root; run it with --network none --read-only and the
# evidence mounted read-only (compose.yaml's `verify` service does exactly that).
FROM verify-base AS verify
COPY --from=verify-build /opt/venv /opt/venv
COPY data/mnist /opt/rev88/data/mnist
# The frozen reference (the original study's JSON evidence, <1 MB): our archives' predictions
# are compared with it wherever the evidence folder is mounted. The GPU image's lock file lets
# the verifier check the lock sha256 that a record claiming the pinned image carries.
COPY evidence/rev88-original /opt/rev88/evidence/rev88-original
COPY docker/requirements-gpu.lock /opt/rev88/docker/requirements-gpu.lock
ENV PATH=/opt/venv/bin:$PATH \
    REV88_RAW_DIR=/opt/rev88/data/mnist \
    REV88_ORIGINAL_DIR=/opt/rev88/evidence/rev88-original \
    REV88_GPU_LOCK_FILE=/opt/rev88/docker/requirements-gpu.lock \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /evidence
USER 10001:10001
ENTRYPOINT ["rev88", "verify"]

# ---------------------------------------------------------------------------------------------
# gpu-base: Debian 12 with Debian's Python 3.11 (plain-HTTP apt from the base image's own sources).
FROM ${GPU_BASE_IMAGE} AS gpu-base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3-venv=3.11.2-1+b1 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -c 'import sys, venv; assert sys.version_info[:2] == (3, 11), sys.version'

# ncu-fetch: Nsight Compute, sha256-checked, unpacked into /opt/nsight-compute with the layout the
# ncu binary expects (target/<platform>/ncu beside sections/), plus the top-level `ncu` wrapper.
#   NCU_SOURCE=debian (default): nsight-compute-target (the ncu CLI of the CUDA 12.4.1 toolkit,
#     ~100 MB) and nsight-compute (only its sections/ folder is kept) from the non-free component
#     of Debian's NCU_DEBIAN_SUITE, at the mirror the base image's own apt sources name
#     (docker/derive_apt_source.py writes that source; no mirror host is named here). apt checks
#     the archive signatures with the base's keyring (updated first), then sha256sum the files.
#   NCU_SOURCE=deb-url: the original study's Nsight Compute 2025.1.1, NVIDIA's
#     nsight-compute-2025.1.1_2025.1.1.2-1_amd64.deb from NVIDIA's CUDA repository for ubuntu2204
#     x86_64; pass its address as NCU_DEB_URL and NCU_VERSION=2025.1.1.0. NCU_DEB_SHA256 defaults to
#     that file's sha256 (as the original cache audit recorded it). Not built by our CI.
FROM gpu-base AS ncu-fetch
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG NCU_SOURCE=debian
ARG NCU_DEBIAN_SUITE=trixie
ARG NCU_DEBIAN_VERSION=2024.1.1.4~12.4.1-2
ARG NCU_TARGET_DEB_SHA256=e3c38f3f24e8b08dd389616991f698ee3550131dc79a9887736bf476444fde13
ARG NCU_SECTIONS_DEB_SHA256=6c051bb3cd1795aa6d61b52977eb40d848e11816693eb27cc95d8ddac27c8cff
ARG NCU_DEB_URL=
ARG NCU_DEB_SHA256=d386c53f5452ddfaec8de3d7240eba1e0d8ffb690aae6585c77d60199e9b2b05
ARG NCU_VERSION=2024.1.1.0
COPY docker/extra-ca/ /tmp/extra-ca/
COPY docker/derive_apt_source.py /tmp/derive_apt_source.py
WORKDIR /tmp/ncu
# DL3008: debian-archive-keyring is taken at its newest bookworm version on purpose (it must know
# the newer suite's signing keys); the .deb files themselves are pinned by version and sha256.
# SC2016: the wrapper script's $(...) must expand when ncu runs, not now.
# hadolint ignore=DL3008,SC2016
RUN case "${NCU_SOURCE}" in \
      debian) \
        apt-get update \
        && apt-get install -y --no-install-recommends debian-archive-keyring \
        && mkdir -p /tmp/ncu-apt/lists/partial /tmp/ncu-apt/parts \
        && touch /tmp/ncu-apt/empty.list \
        && python3 /tmp/derive_apt_source.py --suite "${NCU_DEBIAN_SUITE}" --components non-free \
            > /tmp/ncu-apt/parts/ncu.sources \
        && apt_opts=(-o Dir::Etc::SourceList=/tmp/ncu-apt/empty.list -o Dir::Etc::SourceParts=/tmp/ncu-apt/parts \
                     -o Dir::State::Lists=/tmp/ncu-apt/lists -o Dir::State::Status=/tmp/ncu-apt/empty.list \
                     -o APT::Sandbox::User=root) \
        && apt-get "${apt_opts[@]}" update \
        && apt-get "${apt_opts[@]}" download "nsight-compute-target=${NCU_DEBIAN_VERSION}" \
            "nsight-compute=${NCU_DEBIAN_VERSION}" \
        && echo "${NCU_TARGET_DEB_SHA256}  nsight-compute-target_${NCU_DEBIAN_VERSION}_amd64.deb" > sums \
        && echo "${NCU_SECTIONS_DEB_SHA256}  nsight-compute_${NCU_DEBIAN_VERSION}_amd64.deb" >> sums \
        && sha256sum --check --strict sums \
        && mkdir -p root \
        && for deb in ./*.deb; do dpkg-deb -x "$deb" root; done \
        && mkdir -p /opt/nsight-compute \
        && mv root/usr/lib/x86_64-linux-gnu/nsight-compute/target /opt/nsight-compute/target \
        && mv root/usr/lib/x86_64-linux-gnu/nsight-compute/sections /opt/nsight-compute/sections \
        && printf '%s\n' '#!/bin/sh' \
            'exec "$(dirname "$(readlink -f -- "$0")")/target/linux-desktop-glibc_2_11_3-x64/ncu" "$@"' \
            > /opt/nsight-compute/ncu \
        && printf 'Debian %s non-free: nsight-compute-target %s (sha256 %s), sections/ of nsight-compute %s (sha256 %s)\n' \
            "${NCU_DEBIAN_SUITE}" "${NCU_DEBIAN_VERSION}" "${NCU_TARGET_DEB_SHA256}" "${NCU_DEBIAN_VERSION}" \
            "${NCU_SECTIONS_DEB_SHA256}" > /opt/nsight-compute/SOURCE ;; \
      deb-url) \
        test -n "${NCU_DEB_URL}" || { echo "NCU_SOURCE=deb-url needs --build-arg NCU_DEB_URL=<address of the .deb>" >&2; exit 1; } \
        && find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + > /tmp/ca.pem \
        && if [ -s /tmp/ca.pem ]; then export SSL_CERT_FILE=/tmp/ca.pem; fi \
        && python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], "ncu.deb")' "${NCU_DEB_URL}" \
        && echo "${NCU_DEB_SHA256}  ncu.deb" | sha256sum --check --strict \
        && mkdir -p root && dpkg-deb -x ncu.deb root \
        && src="$(find root/opt/nvidia/nsight-compute -mindepth 1 -maxdepth 1 -type d | head -1)" \
        && mkdir -p /opt/nsight-compute \
        && mv "$src/target" "$src/sections" "$src/ncu" /opt/nsight-compute/ \
        && printf 'deb-url %s (sha256 %s)\n' "${NCU_DEB_URL##*/}" "${NCU_DEB_SHA256}" > /opt/nsight-compute/SOURCE ;; \
      *) echo "unknown NCU_SOURCE=${NCU_SOURCE}: use debian or deb-url" >&2; exit 1 ;; \
    esac \
    && chmod 0755 /opt/nsight-compute/ncu \
    && /opt/nsight-compute/ncu --version | tee /opt/nsight-compute/VERSION \
    && grep -q "Version ${NCU_VERSION} " /opt/nsight-compute/VERSION \
    && rm -rf /tmp/ncu /tmp/ncu-apt /tmp/ca.pem \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

# gpu-venv: the venv from the lock file (the extra CA available to pip; never shipped) and the
# image marker /opt/rev88/image.json (canonical JSON: the lock file's sha256, the stack's versions,
# which ncu the image holds and where it came from). This layer depends on the lock file only, so
# a change to the bundle's code does not reinstall 5 GB of wheels.
# REV88_LOCK_SHA256 must equal sha256(docker/requirements-gpu.lock): the build stops otherwise
# (tests/test_image_files.py keeps this default in step with the lock file).
FROM gpu-base AS gpu-venv
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG GPU_BASE_IMAGE
ARG REV88_LOCK_SHA256=76d2ddfc7facac9a3f18b40381cac77b0fac30f5a4eb0d2fa53d685ee24d7063
COPY docker/extra-ca/ /tmp/extra-ca/
COPY docker/requirements-gpu.lock /opt/rev88/docker/requirements-gpu.lock
COPY docker/write_image_marker.py /tmp/write_image_marker.py
COPY --from=ncu-fetch /opt/nsight-compute /opt/nsight-compute
RUN echo "${REV88_LOCK_SHA256}  /opt/rev88/docker/requirements-gpu.lock" | sha256sum --check --strict \
    && find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + \
        > /tmp/ca-bundle.pem \
    && if [ -s /tmp/ca-bundle.pem ]; then export PIP_CERT=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; fi \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --require-hashes --no-deps \
        -r /opt/rev88/docker/requirements-gpu.lock \
    && /opt/venv/bin/python -m pip check \
    && /opt/venv/bin/python /tmp/write_image_marker.py --lock /opt/rev88/docker/requirements-gpu.lock \
        --ncu /opt/nsight-compute --base-image "${GPU_BASE_IMAGE}" --out /opt/rev88/image.json \
    && rm -f /tmp/ca-bundle.pem

# gpu-bundle: the bundle package (no network: setuptools comes from the lock), installed into its
# own folder /opt/rev88-bundle that a .pth file adds to the venv.
FROM gpu-venv AS gpu-bundle
COPY pyproject.toml /src/pyproject.toml
COPY bundle /src/bundle
COPY verify /src/verify
COPY protocol /src/protocol
RUN /opt/venv/bin/python -m pip install --no-cache-dir --no-input --no-deps --no-build-isolation \
        --target /opt/rev88-bundle /src

# gpu: what `rev88 reproduce --engine docker` starts, one container per job (the engine passes the
# whole command line, so there is no ENTRYPOINT). CUBLAS_WORKSPACE_CONFIG is deliberately NOT set
# here: each job sets it at container start (spec 4.3). The engine runs jobs as the host user
# (files in the bind-mounted run folder stay the user's), except ncu jobs, which need root for
# CAP_SYS_ADMIN unless the host allows counters to all users (docs/gpu-hosts.md). HOME and USER
# are set so that a uid without a passwd entry still has a writable cache folder and a name.
# The marker: /opt/rev88/image.json, REV88_IMAGE_LOCK_SHA256 and the org.rev88.image.* labels;
# records say `pinned_image: true` only when they are present and the versions match.
FROM gpu-base AS gpu
ARG REV88_LOCK_SHA256=76d2ddfc7facac9a3f18b40381cac77b0fac30f5a4eb0d2fa53d685ee24d7063
ARG NCU_VERSION=2024.1.1.0
ARG NCU_SOURCE=debian
COPY --from=gpu-venv /opt/venv /opt/venv
COPY --from=gpu-venv /opt/nsight-compute /opt/nsight-compute
COPY --from=gpu-venv /opt/rev88 /opt/rev88
COPY data/mnist /opt/rev88/data/mnist
COPY evidence/rev88-original /opt/rev88/evidence/rev88-original
COPY --from=gpu-bundle /opt/rev88-bundle /opt/rev88-bundle
LABEL org.rev88.image.target="gpu" \
      org.rev88.image.lock-sha256="${REV88_LOCK_SHA256}" \
      org.rev88.image.torch="2.5.1+cu124" \
      org.rev88.image.ncu-version="${NCU_VERSION}" \
      org.rev88.image.ncu-source="${NCU_SOURCE}"
ENV PATH=/opt/venv/bin:/opt/rev88-bundle/bin:/opt/nsight-compute:$PATH \
    REV88_RAW_DIR=/opt/rev88/data/mnist \
    REV88_ORIGINAL_DIR=/opt/rev88/evidence/rev88-original \
    REV88_IMAGE_MARKER=/opt/rev88/image.json \
    REV88_IMAGE_LOCK_SHA256=${REV88_LOCK_SHA256} \
    REV88_GPU_LOCK_FILE=/opt/rev88/docker/requirements-gpu.lock \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    USER=rev88
WORKDIR /opt/rev88
RUN echo /opt/rev88-bundle > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/rev88-bundle.pth" \
    && python -c 'import json, os, torch, bundle.cli; m = json.load(open(os.environ["REV88_IMAGE_MARKER"])); \
assert m["lock_sha256"] == os.environ["REV88_IMAGE_LOCK_SHA256"] and m["torch"] == torch.__version__, m' \
    && rev88 --help >/dev/null
CMD ["rev88", "--help"]

# gpu-test-build / gpu-test: the gpu image plus the test runner and what the suite imports, pinned in
# docker/requirements-gpu-test.lock and installed into /opt/rev88-test (a .pth adds it to the
# venv), so not one file of the gpu target's venv changes. CI runs the CPU suite in it.
FROM gpu AS gpu-test-build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY docker/extra-ca/ /tmp/extra-ca/
COPY docker/requirements-gpu-test.lock /tmp/requirements-gpu-test.lock
RUN find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + \
        > /tmp/ca-bundle.pem \
    && if [ -s /tmp/ca-bundle.pem ]; then export PIP_CERT=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; fi \
    && python -m pip install --no-cache-dir --no-input --require-hashes --no-deps --target /opt/rev88-test \
        -r /tmp/requirements-gpu-test.lock \
    && rm -f /tmp/ca-bundle.pem

FROM gpu AS gpu-test
COPY --from=gpu-test-build /opt/rev88-test /opt/rev88-test
RUN echo /opt/rev88-test > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/rev88-test.pth" \
    && python -c 'import pytest, xdist, matplotlib, docker, torch, ncu_report, pynvml'
LABEL org.rev88.image.target="gpu-test"
