/**
 * Live device events over socket.io: an app connects with its bearer token and subscribes to
 * a device. Subscriptions are limited to 10 per 10 seconds per app (per connection for a socket
 * without a valid token, which the gateway then refuses). A denied message comes back as an
 * `exception` event carrying the decision (`code: 'TOO_MANY_REQUESTS'`, `retryAfter`).
 *
 * Nest applies no global guard to gateways: the gateway names RateLimitGuard itself.
 */
import { connectionKey, RateLimit, RateLimitGuard } from '@floodgate/nestjs';
import { UseGuards } from '@nestjs/common';
import {
  ConnectedSocket,
  MessageBody,
  type OnGatewayConnection,
  SubscribeMessage,
  WebSocketGateway,
  WsException,
} from '@nestjs/websockets';
import { TOKENS } from './auth.guard.js';

/** What this gateway reads of a socket.io socket. */
interface Socket {
  readonly handshake: { readonly headers: Readonly<Record<string, string | string[] | undefined>> };
  readonly data: { user?: { clientId: string } };
}

@WebSocketGateway({ namespace: 'events' })
@UseGuards(RateLimitGuard)
@RateLimit({ limit: 10, window: '10s', key: ['clientId', connectionKey] })
export class EventsGateway implements OnGatewayConnection {
  /** Authenticates once, at the handshake: `client.data.user` is what `'clientId'` reads. */
  handleConnection(client: Socket): void {
    const header = client.handshake.headers.authorization;
    const clientId =
      typeof header === 'string' && header.startsWith('Bearer ')
        ? TOKENS[header.slice(7)]
        : undefined;
    client.data.user = clientId === undefined ? undefined : { clientId };
  }

  @SubscribeMessage('subscribe')
  subscribe(@ConnectedSocket() client: Socket, @MessageBody() deviceId: string) {
    if (!client.data.user) throw new WsException('a valid bearer token is required');
    return { subscribed: deviceId }; // the acknowledgement
  }
}
