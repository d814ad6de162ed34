import { Injectable } from '@nestjs/common';
import { HotRoute } from '../../shared/http/hot-routes';
import { WebhooksService } from './webhooks.service';

/** Webhook ingest on the hot lane (see `mountHotRoutes`): the same service as `WebhooksController.ingest`. */
@Injectable()
export class WebhookHotRoutes {
  constructor(private readonly webhooks: WebhooksService) {}

  routes(): HotRoute[] {
    return [{
      path: '/api/v1/webhooks',
      // Every delivery is kept in the ledger, one whose body is refused too.
      takesRefusedBodies: true,
      handle: (request) =>
        this.webhooks.ingest({
          headers: request.headers, rawBody: request.rawBody, body: request.body, formEncoded: false, refusal: request.refusal, address: request.address,
        }),
    }];
  }
}
