import { useState } from 'react';
import { Alert, Button, Card, Input, Space, Table, Typography } from 'antd';
import { useLocation } from 'react-router-dom';
import { api, unwrap, ApiError, type Schemas } from '../lib/api';
import { useI18n } from '../lib/i18n';

type Result = Schemas['shopmind.analysis.v1.ExecuteSqlResponse'];

/** The SQL lab: statements run in the sandbox (POST /api/v1/anls/query/execute); refusals are shown as the API words them. */
export default function SqlLab() {
  const { t } = useI18n();
  const loc = useLocation();
  const [sql, setSql] = useState<string>((loc.state as { sql?: string } | null)?.sql ?? 'SELECT 1 AS one');
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<{ code: number; message: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(unwrap(await api.POST('/api/v1/anls/query/execute', { body: { sql, max_rows: 1000 } })));
    } catch (e) {
      setResult(null);
      const err = e as ApiError;
      setError({ code: err.code, message: err.message });
    } finally {
      setBusy(false);
    }
  };

  const cols = (result?.columns ?? []).map((c, i) => ({ title: c.name, dataIndex: String(i), key: String(i) }));
  const rows = ((result?.rows ?? []) as unknown[][]).map((r, k) => Object.fromEntries([['key', k], ...r.map((v, i) => [String(i), v === null ? 'NULL' : String(v)])]));
  return (
    <Space direction="vertical" style={{ width: '100%' }} size="middle">
      <Typography.Title level={2} style={{ margin: 0, fontSize: 20 }}>
        {t('sqlLab')}
      </Typography.Title>
      <Card size="small">
        <Input.TextArea
          aria-label="SQL"
          data-testid="sql-editor"
          value={sql}
          onChange={(e) => setSql(e.target.value)}
          autoSize={{ minRows: 6, maxRows: 20 }}
          spellCheck={false}
          style={{ fontFamily: 'ui-monospace, monospace' }}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void run();
          }}
        />
        <Space style={{ marginTop: 8 }}>
          <Button type="primary" onClick={() => void run()} loading={busy}>
            {t('execute')}
          </Button>
          {result && (
            <Typography.Text type="secondary" data-testid="sql-summary">
              {result.rows?.length ?? 0} {t('rows')} · {result.elapsed_ms} {t('elapsed')} · {result.dialect}
              {result.truncated ? ' · truncated' : ''}
            </Typography.Text>
          )}
        </Space>
      </Card>
      {error && <Alert type="error" role="alert" showIcon data-testid="sql-refusal" message={`${t('refused')} (${error.code})`} description={error.message} />}
      {result && <Table size="small" columns={cols} dataSource={rows} scroll={{ x: true }} pagination={{ pageSize: 50, hideOnSinglePage: true }} data-testid="sql-grid" />}
    </Space>
  );
}
