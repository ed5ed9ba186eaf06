import type { Logger } from '@hookline/logger';
import type { NextFunction, Request, Response } from 'express';
import { errorMiddleware } from './error.middleware';

test('an unexpected error is logged by name, code and its scrubbed first line only', () => {
  const logged: unknown[] = [];
  const logger = { error: (_m: string, meta: unknown) => logged.push(meta), warn: () => undefined } as unknown as Logger;
  const res = { locals: { requestId: 'req_1' }, headersSent: true } as unknown as Response;
  const err = Object.assign(new Error('fetch https://u:LEAK-PW@x.test failed\nbody: {"password":"LEAK-BODY"}'), { code: 'E_X' });
  errorMiddleware(logger)(err, { method: 'POST', path: '/v1/x' } as Request, res, (() => undefined) as NextFunction);
  expect(logged).toEqual([{ request_id: 'req_1', method: 'POST', path: '/v1/x', err: { name: 'Error', code: 'E_X', message: 'fetch https://[redacted]@x.test failed' } }]);
});
