import type { StreamResponse, Task } from '@a2a-js/sdk';
import {
  DefaultPushNotificationSender,
  InMemoryPushNotificationStore,
  ServerCallContext,
} from '@a2a-js/sdk/server';

/**
 * Pushes `responses` (default: the whole task, a v1.0 `{task}` body) for `task` to `url` the way
 * an @a2a-js/sdk agent does: the SDK's own `DefaultPushNotificationSender`. The secret goes in
 * `X-A2A-Notification-Token`, or in `Authorization: <scheme> <token>` when `scheme` is given.
 */
export async function sdkPush(
  url: string,
  task: Task,
  token: string,
  options: { scheme?: string; responses?: readonly StreamResponse[] } = {},
): Promise<void> {
  const store = new InMemoryPushNotificationStore();
  const context = new ServerCallContext({ requestedVersion: '1.0' });
  await store.save(task.id, context, {
    tenant: '',
    id: 'cfg-1',
    taskId: task.id,
    url,
    token: options.scheme === undefined ? token : '',
    authentication:
      options.scheme === undefined ? undefined : { scheme: options.scheme, credentials: token },
  });
  const sender = new DefaultPushNotificationSender(store);
  const responses = options.responses ?? [{ payload: { $case: 'task', value: task } }];
  for (const response of responses) await sender.send(response, context, task);
}
