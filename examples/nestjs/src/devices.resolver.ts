/**
 * The same devices over GraphQL (`POST /graphql`): each app (client id) may run the `devices`
 * query 30 times a minute. A denied query is a GraphQL error whose extensions say why
 * (`code: 'TOO_MANY_REQUESTS'`, `retryAfter` in ms), and the HTTP response carries the same
 * RateLimit headers as the REST routes.
 */
import { RateLimit } from '@floodgate/nestjs';
import { Query, Resolver } from '@nestjs/graphql';
import { DEVICES } from './devices.controller.js';

/** The schema (schema-first: no code generation needed). */
export const typeDefs = /* GraphQL */ `
  type Device {
    id: ID!
    model: String!
    online: Boolean!
  }
  type Query {
    devices: [Device!]!
  }
`;

@Resolver()
@RateLimit({ limit: 30, window: '1m', key: 'clientId' })
export class DevicesResolver {
  @Query('devices')
  devices() {
    return DEVICES;
  }
}
