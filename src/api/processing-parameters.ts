// GET /processing_parameters (the Processing Parameters extension): what users may set at the top
// level of POST /jobs, POST /result and POST /services, or as `default_*_options` of a process.
// The parameters and their effect are in core/processing-options.ts.
import type { AppRoute } from './context.js';
import { json } from './reply.js';

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/processing_parameters',
    summary: 'Processing parameters of batch jobs, synchronous requests and services',
    auth: 'optional',
    handler: (req) =>
      json({
        create_job_parameters: req.app.processing.job,
        create_synchronous_parameters: req.app.processing.sync,
        create_service_parameters: req.app.processing.service,
      }),
  },
];
