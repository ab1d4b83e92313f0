import { useEffect, useMemo, useState } from 'react';
import { Alert, Button, Card, DatePicker, Form, Input, Modal, Select, Space, Table, Tree, Typography } from 'antd';
import { useNavigate, useSearchParams } from 'react-router-dom';
import type { Dayjs } from 'dayjs';
import { api, unwrap, ApiError, type Schemas } from '../lib/api';
import { useI18n } from '../lib/i18n';
import { compareRange, iso, presetRange, presets, type Compare, type Preset, type Range } from '../lib/dates';
import { ChartView } from '../Chart';
import { useInit } from '../Shell';

type Metric = Schemas['shopmind.analysis.v1.Metric'];
type Group = Schemas['shopmind.analysis.v1.MetricGroup'];
type Preview = Schemas['shopmind.analysis.v1.PreviewQueryResponse'];
interface FilterRow {
  field: string;
  operator: string;
  value: string;
}

/** keyOf is a row's key: every non-measure cell (time and dimensions), shifted for comparison by index only. */
const cellText = (v: unknown) => (v === null || v === undefined ? '' : String(v));

export default function Explorer() {
  const { t } = useI18n();
  const nav = useNavigate();
  const { can } = useInit();
  const [params] = useSearchParams();
  const [groups, setGroups] = useState<Group[]>([]);
  const [dims, setDims] = useState<Schemas['shopmind.analysis.v1.CatalogDimension'][]>([]);
  const [metrics, setMetrics] = useState<string[]>(params.get('metric') ? [params.get('metric')!] : []);
  const [dimensions, setDimensions] = useState<string[]>([]);
  const [grain, setGrain] = useState('day');
  const [preset, setPreset] = useState<Preset | 'custom'>('last30');
  const [custom, setCustom] = useState<[Dayjs, Dayjs] | null>(null);
  const [compare, setCompare] = useState<Compare>('none');
  const [filters, setFilters] = useState<FilterRow[]>([]);
  const [result, setResult] = useState<Preview | null>(null);
  const [previous, setPrevious] = useState<Preview | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [showSql, setShowSql] = useState(false);
  const [editing, setEditing] = useState<Metric | 'new' | null>(null);

  const loadCatalog = async () => {
    try {
      setGroups(unwrap(await api.GET('/api/v1/analytics/metrics', {})).groups ?? []);
      setDims(unwrap(await api.GET('/api/v1/anls/catalog', {})).dimensions ?? []);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => {
    void loadCatalog();
  }, []);

  const range: Range | null = useMemo(() => {
    if (preset !== 'custom') return presetRange(preset);
    return custom ? { start: custom[0].startOf('day').toDate(), end: custom[1].add(1, 'day').startOf('day').toDate() } : null;
  }, [preset, custom]);

  const query = (r: Range) =>
    api.POST('/api/v1/anls/query/preview', {
      body: {
        metric_names: metrics,
        dimensions,
        time_granularity: grain === 'none' ? '' : grain,
        start_time: iso(r.start),
        end_time: iso(r.end),
        limit: 1000,
        filters: filters
          .filter((f) => f.field && f.operator)
          .map((f) => ({ field: f.field, operator: f.operator, value: f.operator === 'in' || f.operator === 'not_in' ? f.value.split(',').map((s) => s.trim()) : f.value })),
      },
    });

  const run = async () => {
    if (!range || metrics.length === 0) return;
    setBusy(true);
    setError('');
    try {
      const cur = unwrap(await query(range));
      setResult(cur);
      const cr = compareRange(range, compare);
      setPrevious(cr ? unwrap(await query(cr)) : null);
    } catch (e) {
      setResult(null);
      setPrevious(null);
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const cols = result?.columns ?? [];
  const rows = (result?.rows ?? []) as unknown[][];
  // With a comparison, each measure gets the previous period's value of the row at the same
  // position among rows with the same dimension values (time buckets shift with the period).
  const prevRows = (previous?.rows ?? []) as unknown[][];
  const dimIdx = cols.map((c, i) => (c.role === 'dimension' ? i : -1)).filter((i) => i >= 0);
  const measureIdx = cols.map((c, i) => (c.role === 'measure' ? i : -1)).filter((i) => i >= 0);
  const prevFor = (row: unknown[], n: number) => {
    const key = dimIdx.map((i) => cellText(row[i])).join('\u0000');
    const same = rows.filter((r) => dimIdx.map((i) => cellText(r[i])).join('\u0000') === key);
    const pos = same.indexOf(row);
    const pSame = prevRows.filter((r) => dimIdx.map((i) => cellText(r[i])).join('\u0000') === key);
    return pSame[pos]?.[n];
  };
  const tableCols = [
    ...cols.map((c, i) => ({ title: c.name, dataIndex: String(i), key: String(i) })),
    ...(previous ? measureIdx.map((i) => ({ title: `${cols[i].name} (${t('previous')})`, dataIndex: `p${i}`, key: `p${i}` })) : []),
  ];
  const tableRows = rows.map((r, k) => {
    const o: Record<string, unknown> = { key: k };
    r.forEach((v, i) => (o[String(i)] = cellText(v)));
    if (previous) measureIdx.forEach((i) => (o[`p${i}`] = cellText(prevFor(r, i))));
    return o;
  });
  const chartData = useMemo(() => {
    if (!result || rows.length === 0) return null;
    const cat = cols.findIndex((c) => c.role === 'time');
    const catIdx = cat >= 0 ? cat : dimIdx[0] ?? -1;
    const label = (r: unknown[]) => (catIdx >= 0 ? cellText(r[catIdx]).slice(0, cat >= 0 ? 10 : undefined) : 'total') + (cat >= 0 && dimIdx.length ? ' · ' + dimIdx.map((i) => cellText(r[i])).join(' ') : '');
    return {
      chartType: (cat >= 0 ? 'line' : 'bar') as 'line' | 'bar',
      title: metrics.join(', '),
      columns: [catIdx >= 0 ? cols[catIdx].name : 'total', ...measureIdx.map((i) => cols[i].name), ...(previous ? measureIdx.map((i) => `${cols[i].name} (${t('previous')})`) : [])],
      rows: rows.map((r) => [label(r), ...measureIdx.map((i) => r[i]), ...(previous ? measureIdx.map((i) => prevFor(r, i) ?? null) : [])]),
    };
  }, [result, previous]); // eslint-disable-line react-hooks/exhaustive-deps

  const treeData = groups.map((g) => ({
    title: g.group,
    key: `g:${g.group}`,
    selectable: false,
    children: (g.metrics ?? []).map((m) => ({ title: m.display_name || m.name, key: m.name ?? '' })),
  }));
  const allMetrics = groups.flatMap((g) => g.metrics ?? []);
  const dimOptions = dims.map((d) => ({ value: d.name, label: d.display_name || d.name }));

  return (
    <div style={{ display: 'grid', gridTemplateColumns: '260px 1fr', gap: 16 }}>
      <Card size="small" title={t('metrics')} extra={can('analysis:metric:create') && <Button size="small" onClick={() => setEditing('new')}>{t('newMetric')}</Button>}>
        <Tree
          key={groups.length}
          checkable
          selectable={false}
          defaultExpandAll
          treeData={treeData}
          checkedKeys={metrics}
          onCheck={(k) => setMetrics((Array.isArray(k) ? k : k.checked).map(String).filter((x) => !x.startsWith('g:')))}
          titleRender={(n) => {
            const m = allMetrics.find((x) => x.name === n.key);
            return (
              <span data-testid={m ? `metric-${m.name}` : undefined}>
                {String(n.title)}
                {m && can('analysis:metric:update') && (
                  <Button type="link" size="small" onClick={(e) => (e.stopPropagation(), setEditing(m))} aria-label={`${t('editMetric')} ${m.name}`}>
                    ✎
                  </Button>
                )}
              </span>
            );
          }}
        />
      </Card>
      <Space direction="vertical" style={{ width: '100%' }} size="middle">
        <Typography.Title level={2} style={{ margin: 0, fontSize: 20 }}>
          {t('explorer')}
        </Typography.Title>
        <Card size="small">
          <Space wrap>
            <Select aria-label={t('dimensions')} mode="multiple" placeholder={t('dimensions')} style={{ minWidth: 200 }} value={dimensions} onChange={setDimensions} options={dimOptions} />
            <Select
              aria-label={t('grain')}
              value={grain}
              onChange={setGrain}
              style={{ width: 110 }}
              options={['none', 'day', 'week', 'month'].map((g) => ({ value: g, label: g === 'none' ? '—' : g }))}
            />
            <Select aria-label={t('dateRange')} value={preset} onChange={setPreset} style={{ width: 150 }} options={[...presets.map((p) => ({ value: p, label: t(p) })), { value: 'custom', label: '…' }]} />
            {preset === 'custom' && <DatePicker.RangePicker value={custom} onChange={(v) => setCustom(v && v[0] && v[1] ? [v[0], v[1]] : null)} />}
            <Select
              aria-label={t('compare')}
              value={compare}
              onChange={setCompare}
              style={{ width: 170 }}
              options={[
                { value: 'none', label: t('compareNone') },
                { value: 'previous', label: t('comparePrev') },
                { value: 'yoy', label: t('compareYoY') },
              ]}
            />
            <Button type="primary" onClick={() => void run()} loading={busy} disabled={metrics.length === 0}>
              {t('run')}
            </Button>
          </Space>
          <div style={{ marginTop: 8 }}>
            {filters.map((f, i) => (
              <Space key={i} style={{ marginBottom: 4 }}>
                <Select aria-label={t('filters')} style={{ width: 160 }} value={f.field || undefined} options={dimOptions} onChange={(v) => setFilters(filters.map((x, j) => (j === i ? { ...x, field: v } : x)))} />
                <Select aria-label="operator" style={{ width: 100 }} value={f.operator} options={['eq', 'ne', 'in', 'not_in', 'like'].map((o) => ({ value: o, label: o }))} onChange={(v) => setFilters(filters.map((x, j) => (j === i ? { ...x, operator: v } : x)))} />
                <Input aria-label="value" style={{ width: 200 }} value={f.value} onChange={(e) => setFilters(filters.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))} />
                <Button onClick={() => setFilters(filters.filter((_, j) => j !== i))}>×</Button>
              </Space>
            ))}
            <Button size="small" type="dashed" onClick={() => setFilters([...filters, { field: '', operator: 'eq', value: '' }])}>
              {t('addFilter')}
            </Button>
          </div>
        </Card>
        {error && <Alert type="error" role="alert" showIcon message={error} />}
        {chartData && <ChartView data={chartData} />}
        {result && (
          <>
            <Space>
              <Button onClick={() => setShowSql(!showSql)}>{t('viewSql')}</Button>
              <Button onClick={() => nav('/sql', { state: { sql: result.sql } })}>{t('openInSqlLab')}</Button>
            </Space>
            {showSql && (
              <pre data-testid="generated-sql" style={{ background: '#f8fafc', padding: 12, whiteSpace: 'pre-wrap' }}>
                {result.sql}
                {'\n-- params: ' + JSON.stringify(result.params)}
              </pre>
            )}
            <Table size="small" data-testid="explorer-table" columns={tableCols} dataSource={tableRows} scroll={{ x: true }} pagination={{ pageSize: 20, hideOnSinglePage: true }} />
          </>
        )}
      </Space>
      {editing && <MetricForm metric={editing === 'new' ? null : editing} onClose={(changed) => (setEditing(null), changed && void loadCatalog())} canDelete={can('analysis:metric:delete')} />}
    </div>
  );
}

interface MetricValues {
  name: string;
  display_name: string;
  group: string;
  description?: string;
  type: 'derived' | 'order' | 'formula';
  config: string;
}

const configExample: Record<string, string> = {
  derived: '{"aggregation": "sum", "source_field": "basic_order_items.amount"}',
  order: '{"order_field": "paid_amount", "time_basis": "paid_at", "query_condition": []}',
  formula: '{"expression": "gmv / 2", "dependency_ids": []}',
};

/** fieldOf maps an API message naming a field ("metric.display_name: ...", "name: ...") to the form field. */
export function fieldOf(message: string): keyof MetricValues | 'config' | null {
  const m = /^(?:invalid request:\s*)?(?:metric\.)?([a-z_]+)(?:\.[a-z_.\[\]0-9]+)?\s*:/.exec(message);
  if (!m) return null;
  const f = m[1];
  if (['name', 'display_name', 'group', 'description', 'type'].includes(f)) return f as keyof MetricValues;
  if (['config', 'derived', 'order', 'formula'].includes(f)) return 'config';
  return null;
}

function MetricForm({ metric, onClose, canDelete }: { metric: Metric | null; onClose: (changed: boolean) => void; canDelete: boolean }) {
  const { t } = useI18n();
  const [form] = Form.useForm<MetricValues>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const initial: Partial<MetricValues> = metric
    ? {
        name: metric.name,
        display_name: metric.display_name,
        group: metric.group,
        description: metric.description,
        type: metric.type as MetricValues['type'],
        config: JSON.stringify((metric.config as Record<string, unknown> | null)?.[metric.type ?? ''] ?? {}, null, 2),
      }
    : { type: 'derived', config: configExample.derived };

  const save = async (v: MetricValues) => {
    setBusy(true);
    setError('');
    try {
      let cfg: unknown;
      try {
        cfg = JSON.parse(v.config);
      } catch {
        form.setFields([{ name: 'config', errors: ['JSON'] }]);
        return;
      }
      const body = { name: v.name, display_name: v.display_name, group: v.group, description: v.description ?? '', type: v.type, config: { [v.type]: cfg } } as Metric;
      if (metric) {
        // field mask: only what changed
        const changed = (['display_name', 'group', 'description'] as const).filter((k) => (v[k] ?? '') !== (initial[k] ?? ''));
        if (v.config !== initial.config || v.type !== initial.type) changed.push('type' as never, 'config' as never);
        if (v.name !== initial.name) changed.push('name' as never);
        if (changed.length === 0) return onClose(false);
        unwrap(await api.PUT('/api/v1/analytics/metrics/{id}', { params: { path: { id: metric.id ?? '' } }, body: { metric: body, update_mask: changed.join(',') } }));
      } else unwrap(await api.POST('/api/v1/analytics/metrics', { body }));
      onClose(true);
    } catch (e) {
      const msg = (e as ApiError).message;
      const f = fieldOf(msg);
      if (f) form.setFields([{ name: f, errors: [msg] }]);
      else setError(msg);
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    if (!metric) return;
    try {
      unwrap(await api.DELETE('/api/v1/analytics/metrics/{id}', { params: { path: { id: metric.id ?? '' } } }));
      onClose(true);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <Modal
      open
      title={metric ? t('editMetric') : t('newMetric')}
      onCancel={() => onClose(false)}
      onOk={() => form.submit()}
      okText={t('save')}
      cancelText={t('cancel')}
      confirmLoading={busy}
      footer={(orig) => (
        <Space>
          {metric && canDelete && (
            <Button danger onClick={() => void remove()}>
              {t('delete')}
            </Button>
          )}
          {orig}
        </Space>
      )}
    >
      <Form form={form} layout="vertical" initialValues={initial} onFinish={save} data-testid="metric-form">
        <Form.Item label={t('name')} name="name" rules={[{ required: true, message: t('required') }]}>
          <Input />
        </Form.Item>
        <Form.Item label={t('displayName')} name="display_name" rules={[{ required: true, message: t('required') }]}>
          <Input />
        </Form.Item>
        <Form.Item label={t('group')} name="group" rules={[{ required: true, message: t('required') }]}>
          <Input />
        </Form.Item>
        <Form.Item label={t('description')} name="description">
          <Input />
        </Form.Item>
        <Form.Item label={t('type')} name="type">
          <Select
            options={['derived', 'order', 'formula'].map((x) => ({ value: x, label: x }))}
            onChange={(v: string) => !metric && form.setFieldValue('config', configExample[v])}
          />
        </Form.Item>
        <Form.Item label={t('config')} name="config">
          <Input.TextArea autoSize={{ minRows: 3 }} style={{ fontFamily: 'ui-monospace, monospace' }} />
        </Form.Item>
        {error && <Alert type="error" role="alert" showIcon message={error} />}
      </Form>
    </Modal>
  );
}

