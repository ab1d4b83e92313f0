import { useEffect, useState } from 'react';
import { Alert, Badge, Card, Col, List, Row, Select, Space, Statistic, Tag, Typography } from 'antd';
import { api, unwrap, type Schemas } from '../lib/api';
import { useI18n } from '../lib/i18n';
import { change, compareRange, iso, presetRange, presets, type Preset, type Range } from '../lib/dates';
import { ChartView, type ChartData } from '../Chart';

type Metric = Schemas['shopmind.analysis.v1.Metric'];
type Notification = Schemas['shopmind.notify.v1.Notification'];

// The KPI cards: the first metric of the catalog matching each of these, in this order.
const kpiNames = [
  ['gmv', 'sales_amount', 'paid_amount'],
  ['order_count', 'orders', 'order_cnt'],
  ['buyer_count', 'buyers', 'customer_count'],
  ['aov', 'avg_order_value', 'average_order_value'],
  ['refund_amount', 'refunds', 'refund_count'],
];

export function pickKpis(all: Metric[]): Metric[] {
  const out: Metric[] = [];
  for (const names of kpiNames) {
    const m = names.map((n) => all.find((x) => x.name === n)).find(Boolean);
    if (m) out.push(m);
  }
  return out.length ? out : all.slice(0, 4);
}

export default function Home() {
  const { t } = useI18n();
  const [preset, setPreset] = useState<Preset>('last30');
  const [shop, setShop] = useState('');
  const [shops, setShops] = useState<Schemas['shopmind.basic.v1.Shop'][]>([]);
  const [kpis, setKpis] = useState<Metric[]>([]);
  const [values, setValues] = useState<Record<string, { cur: number; prev: number }>>({});
  const [trend, setTrend] = useState<ChartData | null>(null);
  const [notes, setNotes] = useState<{ items: Notification[]; unread: number }>({ items: [], unread: 0 });
  const [error, setError] = useState('');

  useEffect(() => {
    api.GET('/api/v1/analytics/metrics', {}).then(
      (r) => setKpis(pickKpis((unwrap(r).groups ?? []).flatMap((g) => g.metrics ?? []))),
      (e) => setError((e as Error).message),
    );
    api.GET('/api/v1/basic/shops', { params: { query: { page_size: 100 } } }).then(
      (r) => setShops(unwrap(r).items ?? []),
      () => setShops([]),
    );
    api.POST('/api/v1/notify/collect/list', { body: { page_num: 1, page_size: 8 } }).then(
      (r) => {
        const d = unwrap(r);
        setNotes({ items: d.items ?? [], unread: Number(d.unread ?? 0) });
      },
      () => setNotes({ items: [], unread: 0 }),
    );
  }, []);

  useEffect(() => {
    if (kpis.length === 0) return;
    const names = kpis.map((k) => k.name ?? '');
    const filters = shop ? [{ field: 'shop', operator: 'eq', value: shop }] : [];
    const q = (r: Range, grain = '') =>
      api.POST('/api/v1/anls/query/preview', { body: { metric_names: names, start_time: iso(r.start), end_time: iso(r.end), time_granularity: grain, filters, limit: 1000 } });
    const r = presetRange(preset);
    const p = compareRange(r, 'previous')!;
    const total = (d: Schemas['shopmind.analysis.v1.PreviewQueryResponse']) => {
      const row = ((d.rows ?? []) as unknown[][])[0] ?? [];
      return Object.fromEntries((d.columns ?? []).map((c, i) => [c.name, Number(row[i] ?? 0)]));
    };
    setError('');
    Promise.all([q(r), q(p), q(r, 'day')]).then(
      ([a, b, c]) => {
        const cur = total(unwrap(a));
        const prev = total(unwrap(b));
        setValues(Object.fromEntries(names.map((n) => [n, { cur: cur[n] ?? 0, prev: prev[n] ?? 0 }])));
        const d = unwrap(c);
        const cols = d.columns ?? [];
        const ti = cols.findIndex((x) => x.role === 'time');
        const mi = cols.findIndex((x) => x.name === names[0]);
        setTrend({
          chartType: 'line',
          title: `${kpis[0].display_name || names[0]} · ${t('trend')}`,
          columns: ['time', kpis[0].display_name || names[0]],
          rows: ((d.rows ?? []) as unknown[][]).map((row) => [String(row[ti] ?? '').slice(0, 10), row[mi]]),
        });
      },
      (e) => setError((e as Error).message),
    );
  }, [kpis, preset, shop, t]);

  return (
    <Space direction="vertical" style={{ width: '100%' }} size="middle">
      <Space style={{ justifyContent: 'space-between', width: '100%' }} wrap>
        <Typography.Title level={2} style={{ margin: 0, fontSize: 20 }}>
          {t('home')}
        </Typography.Title>
        <Space>
          <Select aria-label={t('dateRange')} value={preset} onChange={setPreset} style={{ width: 150 }} options={presets.map((p) => ({ value: p, label: t(p) }))} />
          <Select aria-label={t('shop')} value={shop} onChange={setShop} style={{ width: 180 }} options={[{ value: '', label: t('allShops') }, ...shops.map((s) => ({ value: s.id, label: s.name }))]} />
        </Space>
      </Space>
      {error && <Alert type="error" role="alert" showIcon message={error} />}
      <Row gutter={[12, 12]}>
        {kpis.map((k) => {
          const v = values[k.name ?? ''];
          const c = v ? change(v.cur, v.prev) : null;
          return (
            <Col key={k.name} xs={24} sm={12} lg={Math.max(4, Math.floor(24 / kpis.length))}>
              <Card size="small" data-testid={`kpi-${k.name}`}>
                <Statistic title={k.display_name || k.name} value={v ? v.cur : '—'} precision={v && !Number.isInteger(v.cur) ? 2 : 0} />
                <Typography.Text type={c === null ? 'secondary' : c >= 0 ? 'success' : 'danger'}>
                  {c === null ? '—' : `${c >= 0 ? '▲' : '▼'} ${(Math.abs(c) * 100).toFixed(1)}%`} {t('vsPrevious')}
                </Typography.Text>
              </Card>
            </Col>
          );
        })}
      </Row>
      <Row gutter={12}>
        <Col xs={24} lg={16}>{trend && <ChartView data={trend} height={280} />}</Col>
        <Col xs={24} lg={8}>
          <Card
            size="small"
            title={
              <Space>
                {t('notifications')}
                <Badge count={notes.unread} overflowCount={99} showZero aria-label={`${notes.unread} ${t('unread')}`} />
              </Space>
            }
          >
            <List
              size="small"
              locale={{ emptyText: t('empty') }}
              dataSource={notes.items}
              renderItem={(n) => (
                <List.Item>
                  <List.Item.Meta title={<Space>{!n.read && <Tag color="blue">{t('unread')}</Tag>}{n.title}</Space>} description={n.content.slice(0, 120)} />
                </List.Item>
              )}
            />
          </Card>
        </Col>
      </Row>
    </Space>
  );
}
