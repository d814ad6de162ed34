import { inJsonbOrder } from './jsonb-order';

describe('inJsonbOrder', () => {
  it('orders keys as PostgreSQL 15 prints the same value cast to jsonb', () => {
    // select '{"bb":1,"a":2,"ab":3,"é":4,"zz":5,"B":6,"n":{"yy":1,"x":[{"kk":1,"j":2}]}}'::jsonb::text
    const given = { bb: 1, a: 2, ab: 3, é: 4, zz: 5, B: 6, n: { yy: 1, x: [{ kk: 1, j: 2 }] } };
    expect(JSON.stringify(inJsonbOrder(given))).toBe('{"B":6,"a":2,"n":{"x":[{"j":2,"kk":1}],"yy":1},"ab":3,"bb":1,"zz":5,"é":4}');
  });

  it('leaves what is not an object as it is', () => {
    expect([inJsonbOrder(null), inJsonbOrder('text'), inJsonbOrder(3), inJsonbOrder([2, 1])]).toEqual([null, 'text', 3, [2, 1]]);
  });
});
