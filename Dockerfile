# b2b-sidecar container image.
#
#   docker build -t b2b-sidecar:0.1.0 .
#   podman build --format docker -t b2b-sidecar:0.1.0 .    # (or buildah bud --format docker)
# podman and buildah write OCI images by default, and the OCI format has no health check: without
# --format docker they drop HEALTHCHECK below (with a warning). From a release's Linux archive
# instead of a checkout: deploy/container/Dockerfile (docs/install.md, "A container image").
#   docker run --rm -v "$PWD/sidecar.yaml:/etc/b2b-sidecar/sidecar.yaml:ro" \
#     -v "$PWD/secrets:/run/secrets/b2b:ro" -p 127.0.0.1:8080:8080 b2b-sidecar:0.1.0
#
# The process runs as uid/gid 65532: the mounted secret files must be readable by it, e.g.
#   chgrp 65532 secrets/api-key secrets/password && chmod 0440 secrets/api-key secrets/password
#
# The image ships no config: mount one at /etc/b2b-sidecar/sidecar.yaml (see
# config/sidecar.example.yaml) or override CMD. test/deploy/dockerfile.test.ts checks the invariants below;
# scripts/runtime-smoke.sh reproduces the runtime stage without Docker.
#
# Base image choice: node:24-bookworm-slim (the runtime in .node-version) for both stages, pinned by
# full version tag (pin the digest too in your own registry mirror).
# - The contract is ENTRYPOINT ["node", "dist/cli.js"]. In gcr.io/distroless/nodejs24-debian12 the
#   binary is /nodejs/bin/node, which is not on the image's PATH (its own entrypoint is the absolute
#   path), so that ENTRYPOINT would only work with a PATH override we could not test here (no
#   Docker engine in CI), and distroless only offers a floating "nodejs24" tag.
# - Distroless has no npm, so the runtime stage could not run `npm ci --omit=dev` itself.
# - Nothing at run time uses a shell: ENTRYPOINT, CMD and HEALTHCHECK are exec form and npm is
#   deleted from the runtime stage. /bin/sh is still present in the slim base; if you need it gone,
#   copy /app from this image onto a distroless base with ENTRYPOINT ["/nodejs/bin/node", "dist/cli.js"].

# ---- build: all dependencies, compile TypeScript to dist/ and bundle the CLI ----
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
# Manifests first so the dependency layer is cached until package*.json change.
# npm 10 can print "Exit handler never called!" after a failed download and still exit 0 with
# the tree half installed; `npm ls` exits non-zero on any missing package, so the build stops here.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm ls --all >/dev/null
COPY tsconfig.json ./
COPY scripts/bundle.mjs scripts/warm-code-cache.mjs ./scripts/
COPY src ./src
RUN npm run build

# ---- runtime: production dependencies and dist/ only ----
FROM node:24.21.0-bookworm-slim AS runtime
ENV NODE_ENV=production
# The young generation's cap (two semi-spaces of 4 MB, src/shared/v8-tuning.ts): exact only when
# given at start; on Node 24 this V8 heap option leaves Node's code caches in use. And
# --disable-sigusr1: no signal opens Node's inspector, which would hand out the credentials
# (docs/security.md, "The process").
ENV NODE_OPTIONS="--max-semi-space-size=4 --disable-sigusr1"
WORKDIR /app
COPY package.json package-lock.json ./
# No production dependency has an install script, so --ignore-scripts loses nothing. `npm ls
# --omit=dev` fails the build when npm ci left the tree incomplete (see the build stage). npm,
# corepack and yarn (the base image ships yarn 1 in /opt) are removed afterwards: nothing runs
# them at run time, and they are the image's largest source of scanner findings.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm ls --omit=dev --all >/dev/null \
  && npm cache clean --force \
  && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
    /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
    /opt/yarn-v* /usr/local/bin/yarn /usr/local/bin/yarnpkg /root/.npm
COPY --from=build /src/dist ./dist
# Files stay root-owned and read-only to the process. 65532 is the conventional "nonroot" uid
# (as in distroless); numeric so Kubernetes runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
# 8080: proxy listener, 9464: admin (/healthz, /readyz, /metrics). Both bind 127.0.0.1 by default;
# set listen.host / admin.host to 0.0.0.0 in the config to publish them from a container.
EXPOSE 8080 9464
# The CLI's healthcheck reads the admin host and port from the same config file and B2B_*
# environment as `run` (no curl in the image) and asks /healthz: 0 healthy, 1 unhealthy, 2 invalid
# config. If you override CMD with another --config path, override HEALTHCHECK the same way.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "dist/cli.js", "healthcheck", "--config", "/etc/b2b-sidecar/sidecar.yaml"]
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["run", "--config", "/etc/b2b-sidecar/sidecar.yaml"]
