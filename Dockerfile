# rev88-bundle images. Two final targets:
#
#   verify  offline verifier (numpy, typer, rich; no torch, no GPU), ENTRYPOINT rev88 verify
#   gpu     the measuring side: PyTorch 2.5.1 + CUDA 12.4, numpy 2.2.6, nvidia-ml-py 12.560.30,
#           Nsight Compute 2025.1.1, the bundle package
#
# The verify stages come FIRST: the legacy builder (DOCKER_BUILDKIT=0) builds every stage
# that precedes --target, and the GPU base cannot be pulled on machines without Docker Hub.
#
# Base images are build arguments pinned by digest; override them to build from a local base
# (CI: `--build-arg VERIFY_BASE_IMAGE=local/bookworm-base`, a debootstrap bookworm minbase).
#
# VERIFY_BASE_IMAGE: python:3.11-slim-bookworm, digest a36c24f9... is one published digest of
#   that tag (recorded 2026-11-30; registries are unreachable from our CI, so not re-checked there).
# GPU_BASE_IMAGE: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime, digest c8268a92... as pinned by
#   several public projects (Python 3.11, torch 2.5.1+cu124, CUDA 12.4: the original study's stack,
#   spec 8.1; not re-checked from our CI).
#
# Extra CA: files *.crt / *.pem in docker/extra-ca/ (normally none) are joined into one bundle used
# as PIP_CERT / SSL_CERT_FILE in the BUILD stages only; the final stages copy nothing from there.
# Put a complete PEM bundle there (e.g. the host's /etc/ssl/certs/ca-certificates.crt) when a
# TLS-intercepting proxy sits between the build and PyPI / NVIDIA.
#
# MNIST: the four official .gz files (data/mnist, 11 MB, sha256-pinned in bundle/data.py) are
# copied into both images at /opt/rev88/data/mnist (REV88_RAW_DIR), so the verifier can rebuild
# the draws offline. The evidence is NOT in the image: it is mounted (read-only for verify).
#
# No "# syntax=" line: it would pull a frontend image from Docker Hub.

ARG VERIFY_BASE_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG GPU_BASE_IMAGE=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime@sha256:c8268a92a69bd500f8be0e665b2630ee006dadaf7bfbc24249141b15ff622755

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
RUN find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + \
        > /tmp/ca-bundle.pem \
    && if [ -s /tmp/ca-bundle.pem ]; then export PIP_CERT=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; fi \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --require-hashes \
        -r /tmp/requirements-verify.txt \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --no-deps --no-build-isolation /src \
    && /opt/venv/bin/python -c 'import bundle.cli, verify'

# verify: the offline verifier. Non-root; run it with --network none --read-only and the
# evidence mounted read-only (compose.yaml's `verify` service does exactly that).
FROM verify-base AS verify
COPY --from=verify-build /opt/venv /opt/venv
COPY data/mnist /opt/rev88/data/mnist
# The frozen reference (the original study's JSON evidence, <1 MB): our archives' predictions
# are compared with it wherever the evidence folder is mounted.
COPY evidence/rev88-original /opt/rev88/evidence/rev88-original
ENV PATH=/opt/venv/bin:$PATH \
    REV88_RAW_DIR=/opt/rev88/data/mnist \
    REV88_ORIGINAL_DIR=/opt/rev88/evidence/rev88-original \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /evidence
USER 10001:10001
ENTRYPOINT ["rev88", "verify"]

# ---------------------------------------------------------------------------------------------
# gpu-build: venv over the image's conda Python (keeps its torch 2.5.1+cu124), pinned pip
# packages, and Nsight Compute 2025.1.1 unpacked from NVIDIA's .deb after a sha256 check
# (the same package, URL and hash as the original cache audit, spec 6.1).
FROM ${GPU_BASE_IMAGE} AS gpu-build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG NCU_DEB_URL=https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/nsight-compute-2025.1.1_2025.1.1.2-1_amd64.deb
ARG NCU_DEB_SHA256=d386c53f5452ddfaec8de3d7240eba1e0d8ffb690aae6585c77d60199e9b2b05
COPY docker/extra-ca/ /tmp/extra-ca/
COPY docker/requirements-gpu.txt /tmp/requirements-gpu.txt
COPY pyproject.toml /src/pyproject.toml
COPY bundle /src/bundle
COPY verify /src/verify
RUN find /tmp/extra-ca -maxdepth 1 -type f \( -name '*.crt' -o -name '*.pem' \) -exec cat {} + \
        > /tmp/ca-bundle.pem \
    && if [ -s /tmp/ca-bundle.pem ]; then export PIP_CERT=/tmp/ca-bundle.pem SSL_CERT_FILE=/tmp/ca-bundle.pem; fi \
    && python -c 'import sys, torch; assert sys.version_info[:2] == (3, 11); assert torch.__version__ == "2.5.1+cu124", torch.__version__' \
    && python -m venv --system-site-packages /opt/venv \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --require-hashes \
        -r /tmp/requirements-gpu.txt \
    && /opt/venv/bin/python -m pip install --no-cache-dir --no-input --no-deps --no-build-isolation /src \
    && /opt/venv/bin/python -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], "/tmp/ncu.deb")' "${NCU_DEB_URL}" \
    && echo "${NCU_DEB_SHA256}  /tmp/ncu.deb" | sha256sum --check --strict \
    && mkdir -p /tmp/ncu-root \
    && dpkg-deb -x /tmp/ncu.deb /tmp/ncu-root \
    && mkdir -p /opt/nvidia \
    && mv /tmp/ncu-root/opt/nvidia/nsight-compute /opt/nvidia/nsight-compute \
    && test -x /opt/nvidia/nsight-compute/2025.1.1/ncu \
    && echo /opt/nvidia/nsight-compute/2025.1.1/extras/python \
        > "$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ncu_report.pth" \
    && /opt/venv/bin/python -c 'import numpy, pynvml, bundle; assert numpy.__version__ == "2.2.6"' \
    && rm -rf /tmp/ncu.deb /tmp/ncu-root

# gpu: what `rev88 reproduce --engine docker` starts, one container per job (the engine passes the
# whole command line, so there is no ENTRYPOINT). CUBLAS_WORKSPACE_CONFIG is deliberately NOT set
# here: each job sets it at container start (spec 4.3). The engine runs jobs as the host user
# (files in the bind-mounted run folder stay the user's), except ncu jobs, which need root for
# CAP_SYS_ADMIN unless the host allows counters to all users (docs/gpu-hosts.md). HOME and USER
# are set so that a uid without a passwd entry still has a writable cache folder and a name.
FROM ${GPU_BASE_IMAGE} AS gpu
COPY --from=gpu-build /opt/venv /opt/venv
COPY --from=gpu-build /opt/nvidia/nsight-compute /opt/nvidia/nsight-compute
COPY data/mnist /opt/rev88/data/mnist
ENV PATH=/opt/venv/bin:/opt/nvidia/nsight-compute/2025.1.1:$PATH \
    REV88_RAW_DIR=/opt/rev88/data/mnist \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    USER=rev88
WORKDIR /opt/rev88
CMD ["rev88", "--help"]
