# syntax=docker/dockerfile:1
# check=error=true

# tt-media-server (Go) container images. Two targets:
#
#   sim   (the default, last stage) a mock-device image: the server built with cgo and no
#         ttnn tag, so its devices are the C simulator behind the same C ABI as the tests and
#         the metal backend (a CGO_ENABLED=0 build would only fail every device call), on
#         debian:bookworm-slim with Debian's ffmpeg (so it serves video: MODEL_SERVICE=video
#         encodes MP4s with libx264; also M4A/AAC uploads and speech mp3/opus/aac) and the
#         native image codecs, installed without recommends; non-root (uid 65532, which owns
#         the working directory /app where the job store ./jobs.db lives), with a
#         HEALTHCHECK on /tt-liveness. No Tenstorrent hardware or software needed.
#           docker build -t tt-media-server:sim .
#           docker run --rm -p 8000:8000 tt-media-server:sim
#
#   ttnn  the hardware image: built with `-tags ttnn` (cgo, metal backend over the tt-mlir
#         runtime) on a tt-mlir / tt-metal base image that already holds a BUILT tt-mlir
#         runtime under $TT_MLIR_HOME (libTTMLIRRuntime.so) and tt-metal under $TT_METAL_HOME.
#           docker build --target ttnn -t tt-media-server:ttnn \
#             --build-arg TT_BASE_IMAGE=<your tt-mlir runtime image> .
#         Host requirements (not something an image can provide):
#           * the tt-kmd driver loaded: /dev/tenstorrent/<N> exists for each chip;
#           * 1 GiB hugepages reserved and mounted at /dev/hugepages-1G (tt-installer or
#             `tt-smi` host setup); the UMD pins its host buffers there;
#           * run with --device /dev/tenstorrent (or /dev/tenstorrent/<N> per chip) and
#             --mount type=bind,src=/dev/hugepages-1G,dst=/dev/hugepages-1G;
#           * the device nodes are root:root 0666 on a default tt-kmd install; if your host
#             restricts them, add --group-add <gid of /dev/tenstorrent/*> or --user root
#             (the Python server's Galaxy lines use --user root).
#         See docs/DEPLOY.md for the Galaxy `docker run` lines.
#         Python workers (DEVICE_BACKEND=python, README "Python workers"): the same image runs
#         Tenstorrent's own Python model runners (tt-media-server HEAD's tt_model_runners) in
#         supervised worker processes. It needs tt-metal's Python environment (which has ttnn;
#         PYTHON_EXECUTABLE, by default ${TT_METAL_HOME}/python_env/bin/python) and a
#         tt-inference-server checkout whose tt-media-server directory is PYTHON_RUNNER_PATH
#         (default /opt/tt-inference-server/tt-media-server), with its Python requirements
#         installed into that environment; bind-mount the checkout (and HF_HOME with the
#         weights) at run time:
#           docker run ... -e DEVICE_BACKEND=python -e MODEL_RUNNER=tt-sdxl-trace \
#             -e DEVICE_IDS="(0),(1),(2),(3)" -e HF_HOME=/hf \
#             --mount type=bind,src=$HOME/tt-inference-server,dst=/opt/tt-inference-server,readonly \
#             --mount type=bind,src=$HOME/.cache/huggingface,dst=/hf tt-media-server:ttnn
#         The worker script itself is inside the binary (written to ~/.cache/tt-media-server).
#
# The server is configured only by environment variables (README.md, config/env.go); it
# listens on SERVICE_HOST:SERVICE_PORT (0.0.0.0:8000).

ARG GO_VERSION=1.26.8
ARG TT_BASE_IMAGE=ghcr.io/tenstorrent/tt-mlir/tt-mlir-ci-ubuntu-22-04:latest

# ---------------------------------------------------------------------------------------------
# Go toolchain image, used as a build stage and as the source of /usr/local/go for the ttnn build.
FROM golang:${GO_VERSION}-bookworm AS go-toolchain

# ---------------------------------------------------------------------------------------------
# Mock-device build: the server with cgo (the C simulator behind the device bridge; glibc only),
# and the health probe, static. Built on golang:bookworm, i.e. Debian 12 as the sim image.
FROM go-toolchain AS build-sim
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/tt-media-server ./cmd/tt-media-server
WORKDIR /src/deploy/healthcheck
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tt-healthcheck .

# ---------------------------------------------------------------------------------------------
# Hardware build: cgo + `-tags ttnn` against the tt-mlir runtime in the base image.
FROM ${TT_BASE_IMAGE} AS build-ttnn
ARG TT_MLIR_HOME=/opt/tt-mlir
ARG TT_METAL_HOME=/opt/tt-mlir/third_party/tt-metal/src/tt-metal
ARG CXX=clang++-17
ARG CC=clang-17
ENV TT_MLIR_HOME=${TT_MLIR_HOME} \
    TT_METAL_HOME=${TT_METAL_HOME} \
    PATH=/usr/local/go/bin:${PATH}
COPY --from=go-toolchain /usr/local/go /usr/local/go
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Fail early, with the reason, when the base image has no built runtime.
RUN test -e "${TT_MLIR_HOME}/build/lib/libTTMLIRRuntime.so" \
    || { echo "TT_BASE_IMAGE has no ${TT_MLIR_HOME}/build/lib/libTTMLIRRuntime.so:" \
              "use an image with tt-mlir built with -DTTMLIR_ENABLE_RUNTIME=ON" \
              "(or set --build-arg TT_MLIR_HOME=...)" >&2; exit 1; }
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 CC="${CC}" CXX="${CXX}" \
    CGO_CPPFLAGS="-I${TT_MLIR_HOME}/runtime/include -I${TT_MLIR_HOME}/build/include -I${TT_MLIR_HOME}/build/runtime/include -I${TT_METAL_HOME} -I${TT_METAL_HOME}/tt_metal/api" \
    CGO_LDFLAGS="-L${TT_MLIR_HOME}/build/lib -Wl,-rpath,${TT_MLIR_HOME}/build/lib" \
    go build -tags ttnn -trimpath -o /out/tt-media-server ./cmd/tt-media-server
WORKDIR /src/deploy/healthcheck
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tt-healthcheck .

# ---------------------------------------------------------------------------------------------
# Hardware runtime image.
FROM ${TT_BASE_IMAGE} AS ttnn
ARG TT_MLIR_HOME=/opt/tt-mlir
ARG TT_METAL_HOME=/opt/tt-mlir/third_party/tt-metal/src/tt-metal
ARG APP_UID=1000
ARG PYTHON_EXECUTABLE=${TT_METAL_HOME}/python_env/bin/python
ARG PYTHON_RUNNER_PATH=/opt/tt-inference-server/tt-media-server
LABEL org.opencontainers.image.title="tt-media-server (ttnn)" \
      org.opencontainers.image.description="Go media inference server for Tenstorrent devices (SDXL, SD3.5, Whisper, ResNet)" \
      org.opencontainers.image.source="https://github.com/tenstorrent/tt-media-server-go"
# The Python image's defaults that matter on hardware: throttle level 5 for every worker.
ENV TT_MLIR_HOME=${TT_MLIR_HOME} \
    TT_METAL_HOME=${TT_METAL_HOME} \
    LD_LIBRARY_PATH=${TT_MLIR_HOME}/build/lib \
    SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=8000 \
    DEFAULT_THROTTLE_LEVEL=5 \
    PYTHON_EXECUTABLE=${PYTHON_EXECUTABLE} \
    PYTHON_RUNNER_PATH=${PYTHON_RUNNER_PATH}
# ffmpeg decodes M4A/MP4 (AAC) and non-Opus WebM uploads (media/audio); every other audio
# format decodes in Go. Without it those uploads get 415 naming ffmpeg.
# libturbojpeg and libwebp7 are the native image codecs the server loads at run time (JPEG
# decode/encode as Pillow, WebP output); Ubuntu names the TurboJPEG package libturbojpeg.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ffmpeg libwebp7 \
    && (apt-get install -y --no-install-recommends libturbojpeg0 || apt-get install -y --no-install-recommends libturbojpeg) \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --uid "${APP_UID}" --create-home --shell /usr/sbin/nologin tt-media \
    && mkdir -p /app \
    && chown tt-media /app
COPY --from=build-ttnn /out/tt-media-server /out/tt-healthcheck /usr/local/bin/
COPY run_uvicorn_equivalent.sh /usr/local/bin/run_uvicorn_equivalent.sh
WORKDIR /app
USER ${APP_UID}
EXPOSE 8000/tcp
# Warm-up of SDXL/SD3.5 traces takes minutes on hardware: a long start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=900s --retries=3 \
    CMD ["/usr/local/bin/tt-healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/run_uvicorn_equivalent.sh"]

# ---------------------------------------------------------------------------------------------
# Mock-device image (default target).
# debian:bookworm-slim: the same Debian 12 (glibc) as golang:bookworm, and Debian's packages:
#   ffmpeg         MP4 encoding for the video service (libx264; without it MODEL_SERVICE=video
#                  refuses to start), M4A/MP4 (AAC) and non-Opus WebM uploads, speech mp3,
#                  opus, aac and ogg;
#   libturbojpeg0, libwebp7  the native image codecs the server dlopens (NATIVE_CODECS=auto;
#                  without them it runs its pure-Go codecs and says so in /tt-liveness).
# --no-install-recommends keeps ffmpeg's optional extras out; the apt lists are removed.
FROM debian:bookworm-slim AS sim
LABEL org.opencontainers.image.title="tt-media-server (sim)" \
      org.opencontainers.image.description="Go media inference server, mock-device mode: simulated devices, no Tenstorrent hardware" \
      org.opencontainers.image.source="https://github.com/tenstorrent/tt-media-server-go"
ENV SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=8000
RUN apt-get update \
    && apt-get install -y --no-install-recommends ffmpeg libturbojpeg0 libwebp7 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /app --shell /usr/sbin/nologin nonroot \
    && mkdir -p /app \
    && chown 65532:65532 /app
COPY --from=build-sim /out/tt-media-server /out/tt-healthcheck /usr/local/bin/
WORKDIR /app
# uid/gid 65532, as distroless's "nonroot" (the Helm chart's mock pods use fsGroup 65532).
USER 65532:65532
EXPOSE 8000/tcp
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/tt-healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tt-media-server"]
