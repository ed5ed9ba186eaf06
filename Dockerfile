# One image for every Hookline service; the command picks the service:
#   docker run hookline services/api/src/main.ts
# `pnpm build` bundles each entry point into dist/ (esbuild); scripts/launch.cjs runs the
# named entry's bundle on plain node, in its own process (no tsx at run time: ~40 MB less
# RSS per service, and no loader process in front of it).
FROM node:20.19-bookworm-slim AS deps
WORKDIR /app
RUN npm install -g pnpm@10.34.8
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages ./packages
COPY services ./services
COPY prisma ./prisma
COPY prisma.config.ts tsconfig.base.json tsconfig.json ./
COPY scripts ./scripts
# The wait-for-migrations init container of the Kubernetes manifests (deploy/kustomize).
COPY deploy/scripts ./deploy/scripts
# The tests the api's discovery documents cite as proofs (/ai/evidence/v1/): it reads and
# hashes them at run time, so a container reports what a checkout does (proven_local_mock,
# with their integrity_ref), not implementation_present. Nothing runs them here.
COPY test ./test
RUN pnpm install --frozen-lockfile
RUN pnpm build

FROM node:20.19-bookworm-slim
ENV NODE_ENV=production
# V8 flags of every service (SERVICE_NODE_OPTIONS in scripts/lib/entries.ts): a 256 MB
# old space, grown in smaller steps than V8's default, and 8 MB semi-spaces. Override them
# per container with NODE_OPTIONS (the deliverer's ConfigMap and compose service do:
# ENTRY_NODE_OPTIONS in the same file).
ENV NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=8"
WORKDIR /app
COPY --from=deps /app /app
# The `node` user of the base image, by number so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 8081 8082 8083
ENTRYPOINT ["node", "/app/scripts/launch.cjs"]
CMD ["services/api/src/main.ts"]
