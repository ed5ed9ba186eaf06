import { startStack } from './lib/stack';
import { startHelper } from './lib/helper';
import { ApiClient } from './lib/api-client';
import { constantRate, eventBody } from './lib/load';
(async () => {
  const stack = await startStack({ label: 'dbg', databaseUrl: 'postgresql://postgres@127.0.0.1:5432/test', redisUrl: 'redis://127.0.0.1:6379', env: {} });
  const rx = await startHelper<{ port: number }>('receiver', 'bench/procs/bench-receiver.main.ts');
  const api = await ApiClient.forNewTenant(stack.apiUrl, stack.pool);
  const h = await api.hook('x', [`http://127.0.0.1:${rx.hello.port}/x`], { max_concurrency: 64 });
  const r = await constantRate({ url: h.hookUrl, body: eventBody(1024) }, 50, 4000);
  console.log('ack', r.ackLatencyMs);
  await new Promise((res) => setTimeout(res, 5000));
  console.log(await rx.ipc.call('stats'));
  const q = await stack.pool.query(`SELECT percentile_cont(array[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY extract(epoch from e.validated_at - e.received_at)*1000) AS val,
     percentile_cont(array[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY extract(epoch from e.filtered_at - e.received_at)*1000) AS filt,
     percentile_cont(array[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY extract(epoch from d.created_at - e.received_at)*1000) AS dcreated,
     percentile_cont(array[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY extract(epoch from d.delivered_at - e.received_at)*1000) AS delivered
     FROM events e JOIN deliveries d ON d.event_id = e.id`);
  console.log(q.rows[0]);
  const a = await stack.pool.query(`SELECT percentile_cont(array[0.5,0.9,0.99]) WITHIN GROUP (ORDER BY extract(epoch from a.started_at - e.received_at)*1000) AS started FROM delivery_attempts a JOIN deliveries d ON d.id=a.delivery_id JOIN events e ON e.id=d.event_id`).catch((e) => ({ rows: [String(e)] }));
  console.log(a.rows[0]);
  await stack.close(); await rx.child.kill(); process.exit(0);
})();
