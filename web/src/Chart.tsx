import { useEffect, useRef, useState } from 'react';
import { Button, Card, Segmented, Space, Table } from 'antd';
import { DownloadOutlined } from '@ant-design/icons';
import { useI18n } from './lib/i18n';

export interface ChartData {
  chartType: 'line' | 'bar' | 'pie' | 'table';
  title: string;
  columns: string[];
  rows: unknown[][];
}

/** toCSV writes RFC 4180 CSV (quotes doubled, fields with separators quoted). */
export function toCSV(columns: string[], rows: unknown[][]): string {
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

function download(name: string, href: string) {
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** fileName makes a title safe as a file name. */
const fileName = (title: string) => (title || 'chart').replace(/[^\p{L}\p{N}_-]+/gu, '_').slice(0, 60);

/**
 * plotted picks what a chart draws from a visualization's columns: the category is the first
 * column holding text (a name rather than an id), the series the numeric columns after it
 * (numeric columns before it are keys, such as a shop id before the shop's name).
 */
export function plotted(columns: string[], rows: unknown[][]): { columns: string[]; rows: unknown[][] } {
  const numeric = columns.map((_, i) => rows.length > 0 && rows.every((r) => r[i] === null || typeof r[i] === 'number'));
  let cat = numeric.findIndex((n) => !n);
  if (cat < 0) cat = 0;
  const series = columns.map((_, i) => i).filter((i) => i > cat && numeric[i]);
  if (series.length === 0) return { columns, rows };
  return { columns: [columns[cat], ...series.map((i) => columns[i])], rows: rows.map((r) => [r[cat], ...series.map((i) => r[i])]) };
}

/**
 * ChartView draws a visualization (ECharts' dataset takes columns and rows as they are; the
 * first column is the category, the others are series) with a table view, CSV export and PNG
 * download. ECharts is imported when the first chart is drawn.
 */
export function ChartView({ data, height = 300 }: { data: ChartData; height?: number }) {
  const { t } = useI18n();
  const [view, setView] = useState<'chart' | 'table'>(data.chartType === 'table' ? 'table' : 'chart');
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<{ getDataURL: (o: object) => string; dispose: () => void; resize: () => void } | null>(null);

  useEffect(() => {
    if (view !== 'chart' || !el.current) return;
    let disposed = false;
    let onResize: (() => void) | undefined;
    void import('./lib/echarts').then(({ echarts }) => {
      if (disposed || !el.current) return;
      const c = echarts.init(el.current, undefined, { renderer: 'canvas' });
      const pie = data.chartType === 'pie';
      const p = plotted(data.columns, data.rows);
      const series = p.columns.slice(1).map(() => (pie ? { type: 'pie' as const, radius: '65%' } : { type: data.chartType as 'line' | 'bar', seriesLayoutBy: 'column' as const }));
      c.setOption({
        animation: false,
        tooltip: { trigger: pie ? 'item' : 'axis' },
        legend: { bottom: 0 },
        dataset: { source: [p.columns, ...p.rows] },
        ...(pie ? {} : { xAxis: { type: 'category' }, yAxis: { type: 'value' }, grid: { left: 48, right: 16, top: 16, bottom: 48 } }),
        series: pie ? series.slice(0, 1) : series,
      });
      chart.current = c;
      onResize = () => c.resize();
      window.addEventListener('resize', onResize);
    });
    return () => {
      disposed = true;
      if (onResize) window.removeEventListener('resize', onResize);
      chart.current?.dispose();
      chart.current = null;
    };
  }, [view, data]);

  const columns = data.columns.map((c, i) => ({ title: c, dataIndex: String(i), key: String(i) }));
  const rows = data.rows.map((r, k) => Object.fromEntries([['key', k], ...r.map((v, i) => [String(i), v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)])]));

  return (
    <Card
      size="small"
      title={data.title}
      data-testid="visualization"
      extra={
        <Space size="small">
          {data.chartType !== 'table' && (
            <Segmented
              size="small"
              value={view}
              onChange={(v) => setView(v as 'chart' | 'table')}
              options={[
                { label: t('chart'), value: 'chart' },
                { label: t('table'), value: 'table' },
              ]}
            />
          )}
          <Button size="small" icon={<DownloadOutlined />} onClick={() => download(`${fileName(data.title)}.csv`, 'data:text/csv;charset=utf-8,' + encodeURIComponent('\ufeff' + toCSV(data.columns, data.rows)))}>
            {t('exportCsv')}
          </Button>
          {view === 'chart' && (
            <Button size="small" icon={<DownloadOutlined />} onClick={() => chart.current && download(`${fileName(data.title)}.png`, chart.current.getDataURL({ type: 'png', pixelRatio: 2, backgroundColor: '#fff' }))}>
              {t('downloadPng')}
            </Button>
          )}
        </Space>
      }
    >
      {view === 'chart' ? (
        <div ref={el} role="img" aria-label={data.title || t('chart')} data-testid="chart" style={{ width: '100%', height }} />
      ) : (
        <Table size="small" columns={columns} dataSource={rows} pagination={{ pageSize: 10, hideOnSinglePage: true }} scroll={{ x: true }} />
      )}
    </Card>
  );
}
