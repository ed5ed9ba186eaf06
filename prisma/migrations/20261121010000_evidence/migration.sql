-- CreateTable
CREATE TABLE "evidence_receipts" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "attempt_id" TEXT NOT NULL,
    "delivery_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "destination_id" TEXT NOT NULL,
    "destination_origin" TEXT,
    "attempt_number" INTEGER NOT NULL,
    "outcome" TEXT NOT NULL,
    "status_code" INTEGER,
    "error_kind" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "request_body_sha256" TEXT,
    "response_body_sha256" TEXT,
    "key_id" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "leaf_hash" TEXT NOT NULL,
    "issued_at" TIMESTAMPTZ(3) NOT NULL,
    "merkle_root_id" TEXT,
    "leaf_index" INTEGER,

    CONSTRAINT "evidence_receipts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "merkle_roots" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "window_end" TIMESTAMPTZ(3) NOT NULL,
    "root_hash" TEXT NOT NULL,
    "leaf_count" INTEGER NOT NULL,
    "key_id" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "merkle_roots_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "mcp_tool_grants" (
    "api_key_id" TEXT NOT NULL,
    "tool_group" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "granted_by" TEXT NOT NULL,
    "granted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mcp_tool_grants_pkey" PRIMARY KEY ("api_key_id","tool_group")
);

-- CreateIndex
CREATE UNIQUE INDEX "evidence_receipts_attempt_id_key" ON "evidence_receipts"("attempt_id");

-- CreateIndex
CREATE INDEX "evidence_receipts_tenant_id_id_idx" ON "evidence_receipts"("tenant_id", "id");

-- CreateIndex
CREATE INDEX "evidence_receipts_delivery_id_idx" ON "evidence_receipts"("delivery_id");

-- CreateIndex
CREATE INDEX "evidence_receipts_event_id_idx" ON "evidence_receipts"("event_id");

-- CreateIndex
CREATE INDEX "evidence_receipts_merkle_root_id_leaf_index_idx" ON "evidence_receipts"("merkle_root_id", "leaf_index");

-- CreateIndex
CREATE INDEX "evidence_receipts_merkle_root_id_issued_at_idx" ON "evidence_receipts"("merkle_root_id", "issued_at");

-- CreateIndex
CREATE INDEX "merkle_roots_tenant_id_id_idx" ON "merkle_roots"("tenant_id", "id");

-- CreateIndex
CREATE INDEX "merkle_roots_tenant_id_window_start_idx" ON "merkle_roots"("tenant_id", "window_start");

-- CreateIndex
CREATE INDEX "mcp_tool_grants_tenant_id_idx" ON "mcp_tool_grants"("tenant_id");
