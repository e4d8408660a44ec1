/**
 * The application: the auth guard first, then RateLimitModule's global RateLimitGuard (Nest
 * runs global guards in registration order, and AppModule's own providers are registered
 * before those of the modules it imports).
 */
import type { Store } from '@floodgate/core';
import { RateLimitModule } from '@floodgate/nestjs';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { BearerAuthGuard } from './auth.guard.js';
import { DevicesController } from './devices.controller.js';
import { DevicesResolver, typeDefs } from './devices.resolver.js';
import { EventsGateway } from './events.gateway.js';
import { HealthController } from './health.controller.js';
import { LoginController } from './login.controller.js';

@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module with a static factory.
export class AppModule {
  /** The app on `store`: `memoryStore()` for one process, `redisStore({ client })` for many. */
  static register(store: Store): DynamicModule {
    return {
      module: AppModule,
      imports: [
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs }),
        RateLimitModule.forRoot({ store, global: true }),
      ],
      controllers: [DevicesController, HealthController, LoginController],
      providers: [
        { provide: APP_GUARD, useClass: BearerAuthGuard },
        DevicesResolver,
        EventsGateway,
      ],
    };
  }
}
