import { UsageError } from '../../tools/cli/commandLine';
import { connectionFrom, parseProducerArgs, type ProducerOptions } from '../../tools/producer/args';
import { buildBody, buildSendPlan, InvalidMessageError, orderSchema, paymentSchema, toServiceBusMessage } from '../../tools/producer/messages';

// No network here: only the pure parts of the producer are imported (send.ts, which builds a
// ServiceBusClient, is not).

const parse = (argv: string[], env: Record<string, string> = {}): ProducerOptions => {
  const options = parseProducerArgs(argv, env, 'run1');
  if (options === 'help') throw new Error('unexpected help');
  return options;
};

describe('producer: arguments', () => {
  test('defaults: one payment, EUR 1999, queue "payments", ids prefixed with the run', () => {
    const options = parse(['--kind', 'payments', '--dry-run']);
    expect(options).toMatchObject({
      kind: 'payments',
      count: 1,
      duplicates: 0,
      reusedKeys: 0,
      amount: 1999,
      currency: 'EUR',
      queue: 'payments',
      idPrefix: 'pay-run1',
      dryRun: true,
      connection: { kind: 'none' },
    });
  });

  test('the queue name defaults to ORDERS_QUEUE_NAME / PAYMENTS_QUEUE_NAME, --queue wins', () => {
    expect(parse(['--kind', 'orders', '--dry-run'], { ORDERS_QUEUE_NAME: 'orders-test' }).queue).toBe('orders-test');
    expect(parse(['--kind', 'orders', '--dry-run', '--queue', 'q2'], { ORDERS_QUEUE_NAME: 'orders-test' }).queue).toBe('q2');
  });

  test('--shards: payments over N task hubs (default PAYMENT_SHARD_COUNT, else 1; 1 to 64); orders refuse it', () => {
    expect(parse(['--kind', 'payments', '--dry-run']).shards).toBe(1);
    expect(parse(['--kind', 'payments', '--dry-run'], { PAYMENT_SHARD_COUNT: '4' }).shards).toBe(4);
    expect(parse(['--kind', 'payments', '--dry-run', '--shards', '3'], { PAYMENT_SHARD_COUNT: '4' }).shards).toBe(3);
    expect(() => parse(['--kind', 'payments', '--dry-run', '--shards', '65'])).toThrow(/--shards/);
    expect(() => parse(['--kind', 'orders', '--dry-run', '--shards', '2'])).toThrow('--shards is for --kind payments only');
  });

  test('--namespace or SERVICEBUS_FULLY_QUALIFIED_NAMESPACE selects identity; a bare name gets the Service Bus suffix', () => {
    expect(parse(['--kind', 'payments', '--namespace', 'sb-abc123']).connection).toEqual({
      kind: 'identity',
      fullyQualifiedNamespace: 'sb-abc123.servicebus.windows.net',
    });
    expect(parse(['--kind', 'payments'], { SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'sb-abc123.servicebus.windows.net' }).connection).toEqual({
      kind: 'identity',
      fullyQualifiedNamespace: 'sb-abc123.servicebus.windows.net',
    });
    expect(connectionFrom('sb://sb-abc123.servicebus.windows.net/', {})).toEqual({
      kind: 'identity',
      fullyQualifiedNamespace: 'sb-abc123.servicebus.windows.net',
    });
  });

  test('SERVICEBUS_CONNECTION_STRING is used only when no namespace is given', () => {
    const env = { SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=not-a-real-key' };
    expect(parse(['--kind', 'payments'], env).connection.kind).toBe('connectionString');
    expect(parse(['--kind', 'payments', '--namespace', 'sb-abc123'], env).connection.kind).toBe('identity');
  });

  test.each([
    [[], /^--kind is required: payments or orders$/],
    [['--kind', 'refunds'], /^--kind must be one of payments, orders, got "refunds"$/],
    [['--kind', 'payments', '--count', '0', '--dry-run'], /^--count must be an integer from 1 to 100000, got "0"$/],
    [['--kind', 'payments', '--count', '-1', '--dry-run'], /^--count must be an integer from 1 to 100000, got "-1"$/],
    [['--kind', 'payments', '--count', 'many', '--dry-run'], /^--count must be an integer from 1 to 100000, got "many"$/],
    [['--kind', 'payments', '--count', '100001', '--dry-run'], /^--count must be an integer from 1 to 100000, got "100001"$/],
    [
      ['--kind', 'payments', '--count', '100000', '--duplicates', '10', '--dry-run'],
      /^--count x \(1 \+ --duplicates \+ --reuse-keys\) must be at most 1000000 messages, got 1100000$/,
    ],
    [['--kind', 'payments', '--amount=-5', '--dry-run'], /^--amount must be an integer from 1 to 9007199254740991, got "-5"$/],
    [['--kind', 'payments', '--amount', '19.99', '--dry-run'], /^--amount must be an integer from 1/],
    [['--kind', 'payments', '--currency', 'eur', '--dry-run'], /^--currency must be an ISO 4217 code: three upper-case letters, e\.g\. EUR, got "eur"$/],
    [['--kind', 'payments', '--currency', 'EURO', '--dry-run'], /^--currency must be an ISO 4217 code/],
    [['--kind', 'orders', '--quantity', '0', '--dry-run'], /^--quantity must be an integer from 1 to 1000000, got "0"$/],
    [['--kind', 'payments', '--duplicates=-1', '--dry-run'], /^--duplicates must be an integer from 0 to 1000, got "-1"$/],
    [['--kind', 'payments', '--resend-delay-seconds', '2147484', '--dry-run'], /^--resend-delay-seconds must be an integer from 0 to 2147483, got "2147484"$/],
    [['--kind', 'payments', '--colour', 'red'], /^unknown option --colour$/],
    [['--kind', 'payments', '--count'], /^--count needs a value$/],
    [['--kind', 'payments', '--dry-run=yes'], /^--dry-run takes no value$/],
    [['--kind', 'payments', 'extra'], /^unexpected argument extra$/],
    [['--kind', 'payments'], /no Service Bus to send to/],
    [['--kind', 'payments', '--namespace', 'not a host!'], /not a Service Bus namespace host name/],
  ])('%j is a clear usage error', (argv, message) => {
    expect(() => parseProducerArgs(argv, {}, 'run1')).toThrow(UsageError);
    expect(() => parseProducerArgs(argv, {}, 'run1')).toThrow(message);
  });

  test("--resend-delay-seconds takes Node's longest timer, 2147483 s", () => {
    expect(parse(['--kind', 'payments', '--dry-run', '--resend-delay-seconds', '2147483']).resendDelaySeconds).toBe(2_147_483);
  });

  test('several bad options are reported together, on one line', () => {
    expect(() => parse(['--kind', 'payments', '--count', '0', '--currency', 'x', '--dry-run'])).toThrow(
      /^--count must be an integer from 1 to 100000, got "0"; --currency must be an ISO 4217 code.*, got "x"$/,
    );
  });

  test('--help and -h return "help"', () => {
    expect(parseProducerArgs(['--help'], {}, 'run1')).toBe('help');
    expect(parseProducerArgs(['-h', '--colour'], {}, 'run1')).toBe('help');
  });
});

describe('producer: messages', () => {
  const payments = parse(['--kind', 'payments', '--dry-run', '--count', '2']);
  const orders = parse(['--kind', 'orders', '--dry-run', '--sku', 'tea', '--quantity', '3', '--unit-price', '450', '--currency', 'GBP']);

  test('a payment body: business id, customer, integer minor units, currency', () => {
    expect(buildBody(payments, 'pay-1')).toEqual({ paymentId: 'pay-1', customerId: 'cust-1', amount: 1999, currency: 'EUR' });
  });

  test('an order body: one line from the options', () => {
    expect(buildBody(orders, 'ord-1')).toEqual({
      orderId: 'ord-1',
      customerId: 'cust-1',
      items: [{ sku: 'tea', quantity: 3, unitPrice: 450 }],
      currency: 'GBP',
    });
  });

  test('MessageId is the business id; the body is JSON with contentType application/json', () => {
    const [first] = buildSendPlan(payments);
    const message = toServiceBusMessage(first);
    expect(message.messageId).toBe('pay-run1-0001');
    expect((message.body as { paymentId: string }).paymentId).toBe(message.messageId);
    expect(message.contentType).toBe('application/json');
    expect(message.correlationId).toBe('run1');
    expect(message.applicationProperties).toEqual({ producerRun: 'run1', sendReason: 'original' });
  });

  test('--count gives distinct ids; --duplicates resends each message unchanged, one round per resend', () => {
    const plan = buildSendPlan({ ...payments, duplicates: 2 });
    expect(plan.map((m) => [m.messageId, m.round, m.applicationProperties.sendReason])).toEqual([
      ['pay-run1-0001', 0, 'original'],
      ['pay-run1-0002', 0, 'original'],
      ['pay-run1-0001', 1, 'duplicate'],
      ['pay-run1-0002', 1, 'duplicate'],
      ['pay-run1-0001', 2, 'duplicate'],
      ['pay-run1-0002', 2, 'duplicate'],
    ]);
    expect(plan[2].body).toEqual(plan[0].body);
  });

  test('--reuse-keys resends each id with a different body (a different digest for the consumer)', () => {
    const plan = buildSendPlan({ ...payments, count: 1, duplicates: 1, reusedKeys: 2 });
    expect(plan.map((m) => [m.messageId, m.round, m.applicationProperties.sendReason, (m.body as { amount: number }).amount])).toEqual([
      ['pay-run1-0001', 0, 'original', 1999],
      ['pay-run1-0001', 1, 'duplicate', 1999],
      ['pay-run1-0001', 2, 'reusedKey', 2000],
      ['pay-run1-0001', 3, 'reusedKey', 2001],
    ]);
    const orderPlan = buildSendPlan({ ...orders, reusedKeys: 1 });
    expect(orderPlan[1].messageId).toBe(orderPlan[0].messageId);
    expect(orderPlan[1].body).not.toEqual(orderPlan[0].body);
  });

  test('every planned body satisfies its schema', () => {
    for (const m of buildSendPlan({ ...payments, duplicates: 1, reusedKeys: 1 })) expect(paymentSchema.safeParse(m.body).success).toBe(true);
    for (const m of buildSendPlan({ ...orders, reusedKeys: 1 })) expect(orderSchema.safeParse(m.body).success).toBe(true);
  });

  test('a body that breaks its schema is an InvalidMessageError naming the field', () => {
    expect(() => buildBody({ ...payments, amount: 0 }, 'pay-1')).toThrow(InvalidMessageError);
    expect(() => buildBody({ ...payments, amount: 0 }, 'pay-1')).toThrow(/amount: /);
    expect(() => buildBody({ ...payments, currency: 'usd' }, 'pay-1')).toThrow(/currency: an ISO 4217 code/);
    expect(() => buildBody(payments, 'x'.repeat(129))).toThrow(/paymentId: 1-128 characters/);
    expect(() => buildBody({ ...orders, unitPrice: 1.5 }, 'ord-1')).toThrow(/items\.0\.unitPrice: must be an integer/);
  });

  test('schemas reject bodies a consumer must not accept', () => {
    expect(paymentSchema.safeParse({ paymentId: 'p', customerId: 'c', amount: 10.5, currency: 'EUR' }).success).toBe(false);
    expect(orderSchema.safeParse({ orderId: 'o', customerId: 'c', items: [], currency: 'EUR' }).success).toBe(false);
  });
});

describe('producer: OrderStatusChanged', () => {
  const statusOptions = (argv: string[]) => parse(['--kind', 'orders', '--dry-run', '--type', 'OrderStatusChanged', ...argv]);

  test('status changes: absolute status and version, MessageId <orderId>:status:<version>, property type set', () => {
    const plan = buildSendPlan(statusOptions(['--status', 'shipped', '--version', '3', '--count', '2']));
    expect(plan.map((m) => m.messageId)).toEqual(['ord-run1-0001:status:3', 'ord-run1-0002:status:3']);
    expect(plan[0].body).toEqual({ orderId: 'ord-run1-0001', status: 'shipped', version: 3 });
    expect(toServiceBusMessage(plan[0]).applicationProperties).toMatchObject({ type: 'OrderStatusChanged', sendReason: 'original' });
  });

  test('orders default to OrderPlaced (type set); payments carry no type', () => {
    expect(buildSendPlan(parse(['--kind', 'orders', '--dry-run']))[0].applicationProperties.type).toBe('OrderPlaced');
    expect(buildSendPlan(parse(['--kind', 'payments', '--dry-run']))[0].applicationProperties.type).toBeUndefined();
  });

  test('--reuse-keys sends the same version with another status (what the consumer parks key-reused)', () => {
    const plan = buildSendPlan(statusOptions(['--reuse-keys', '1']));
    expect(plan.map((m) => [m.messageId, (m.body as { status: string }).status])).toEqual([
      ['ord-run1-0001:status:1', 'paid'],
      ['ord-run1-0001:status:1', 'shipped'],
    ]);
  });

  test.each([
    [['--kind', 'payments', '--type', 'OrderStatusChanged'], '--type is for --kind orders only'],
    [['--kind', 'orders', '--status', 'paid'], '--status is for --type OrderStatusChanged only'],
    [
      ['--kind', 'orders', '--type', 'OrderStatusChanged', '--status', 'lost'],
      '--status must be one of placed, paid, shipped, delivered, cancelled, got "lost"',
    ],
    [['--kind', 'orders', '--type', 'OrderStatusChanged', '--version', '0'], '--version must be an integer from 1 to 9007199254740991, got "0"'],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseProducerArgs([...argv, '--dry-run'], {}, 'run1')).toThrow(new UsageError(message));
  });
});
