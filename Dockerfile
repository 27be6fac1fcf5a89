# Geofabric service image: the gateway (`start`), the perception MCP server (`perception`) and the governance
# tool server (`governance`) all run from this image; deploy/compose.yaml picks the command. Swarm workers
# have their own images (worker-images/).
#
#   docker build -t geofabric:local .
#   docker run --rm geofabric:local help
#
# The image runs the compiled build (`npm run build`: dist/) with plain Node, on an LTS line that is supported
# (Node 24: maintenance until April 2028); it holds no TypeScript sources and never loads tsx. NODE_VERSION may be
# any major in package.json's `engines` (22 or 24 and later); CI tests 24 and 22.

ARG NODE_VERSION=24

# --- deps: production node_modules. better-sqlite3 is a native addon: when no prebuilt binary fits, it
# compiles from source, which needs python3, make and g++ (they stay in this stage).
FROM node:${NODE_VERSION}-bookworm-slim AS deps
# hadolint ignore=DL3008
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm cache clean --force

# --- build: `npm run build` (tsc) with the dev dependencies; no install scripts are needed to type-check and emit.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY activities ./activities
COPY api ./api
COPY bin ./bin
COPY core ./core
COPY mcp ./mcp
COPY store ./store
COPY workflows ./workflows
RUN npm run build

# --- runtime: the slim Node image, the compiled build, no compilers; runs as the image's unprivileged `node` user.
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
  DATA_DIR=/data \
  HOST=0.0.0.0
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY --from=build /app/dist ./dist
COPY dashboard ./dashboard
# bin/geofabric.js alone (no sources beside it) runs dist/: `node /app/bin/geofabric.js …` keeps working.
COPY --from=build /app/bin/geofabric.js ./bin/geofabric.js
# The code stays root-owned (read-only to the service); only DATA_DIR is the service's. A named volume
# mounted at /data starts with this ownership.
RUN mkdir -p /data && chown 1000:1000 /data
# 1000 is the image's `node` user; numeric, so runtimes can check it is not root (runAsNonRoot).
USER 1000:1000
# Smoke test at build time: the compiled CLI loads its whole import graph (a missing file or dependency fails the
# build here).
RUN node dist/bin/geofabric.js help > /dev/null
# gateway, perception MCP server, governance tool server
EXPOSE 8080 8100 8000
# The gateway's liveness (`start`); compose gives perception and governance their own checks. Slim images
# have no curl: Node's fetch does it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Plain Node on the compiled entry point, whatever the working directory (`docker compose run -w /work … keygen`).
ENTRYPOINT ["node", "/app/dist/bin/geofabric.js"]
CMD ["start"]
