import type { Pool } from '@hookline/db';

/**
 * Makes audit_logs writes fail on demand: a row in audit_faults (action, op: INSERT or
 * UPDATE) makes that write of that action raise 'injected audit failure'. For tests of the
 * fail-closed audit (REST and MCP).
 */
export async function installAuditFaults(pool: Pick<Pool, 'query'>): Promise<void> {
  await pool.query(`
    CREATE TABLE audit_faults (action text NOT NULL, op text NOT NULL);
    CREATE FUNCTION audit_fault() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM audit_faults WHERE action = NEW.action AND op = TG_OP) THEN RAISE EXCEPTION 'injected audit failure'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER audit_fault BEFORE INSERT OR UPDATE ON audit_logs FOR EACH ROW EXECUTE FUNCTION audit_fault();
  `);
}
