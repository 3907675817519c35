# syntax=docker/dockerfile:1
#
# The Fleetgate gateway image (docs/deployment.md).
#
#   docker build -t fleetgate .
#   docker run -p 7420:7420 -e FLEETGATE_ADMIN_TOKEN=$(openssl rand -hex 24) \
#     -v fleetgate-data:/var/lib/fleetgate fleetgate
#
# Configuration: the file /etc/fleetgate/fleetgate.yaml (the default below runs the embedded
# store in the data volume; mount your own over it) and the environment, which holds every
# secret the file names (auth.tokens[].tokenEnv, agents[].auth.bearerEnv, PGPASSWORD).
#
# Stages: `build` compiles the package with its dev dependencies; `deps` installs the production
# dependencies only; `demo-agent` runs the example agent of deploy/compose.yaml; the last stage,
# the default target, is the gateway.

ARG NODE_IMAGE=node:20-bookworm
ARG NODE_RUNTIME_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts off: `prepare` would build before the sources are here; the native modules are built
# explicitly instead (better-sqlite3 from its prebuilt binary or from source, esbuild's binary).
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 esbuild
COPY . .
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The PostgreSQL and NATS clients are optional peer dependencies of the library; the gateway
# image runs every store and bus, so they are made dependencies here, at the versions the
# lockfile pins, and only production dependencies are installed.
RUN node -e 'const fs = require("fs"); const p = JSON.parse(fs.readFileSync("package.json", "utf8")); \
      for (const name of Object.keys(p.peerDependencies)) delete p.devDependencies[name]; \
      p.dependencies = { ...p.dependencies, ...p.peerDependencies }; \
      fs.writeFileSync("package.json", JSON.stringify(p, null, 2));' \
 && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 \
 && npm cache clean --force

FROM build AS demo-agent
ENV AGENT_HOST=0.0.0.0 \
    AGENT_PORT=9101
USER node
EXPOSE 9101
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=5 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.AGENT_PORT}/.well-known/agent-card.json`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--import", "tsx", "examples/agents/serve.ts"]

FROM ${NODE_RUNTIME_IMAGE} AS gateway
ENV NODE_ENV=production \
    FLEETGATE_HEALTH_URL=http://127.0.0.1:7420/healthz
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/package.json /src/README.md ./
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/docs ./docs
COPY deploy/docker/fleetgate.yaml /etc/fleetgate/fleetgate.yaml
# The embedded store's directory, owned by the unprivileged user the gateway runs as.
RUN mkdir -p /var/lib/fleetgate && chown node:node /var/lib/fleetgate
USER node
VOLUME ["/var/lib/fleetgate"]
EXPOSE 7420
# The gateway stops gracefully on SIGTERM (calls in flight finish, the outbox is flushed); give
# it listen.shutdownTimeout (15 s) plus a few seconds: `docker stop -t 20`, stop_grace_period.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.FLEETGATE_HEALTH_URL).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "bin/fleetgate.js", "start", "--config", "/etc/fleetgate/fleetgate.yaml"]
