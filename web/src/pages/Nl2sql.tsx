import { useState } from 'react';
import { Alert, Button, Space, Typography } from 'antd';
import { api, unwrap } from '../lib/api';
import { useI18n } from '../lib/i18n';

/** NL2SQL: asks the API for a signed embed URL and shows the provider's page full size. */
export default function Nl2sql() {
  const { t } = useI18n();
  const [url, setUrl] = useState('');
  const [error, setError] = useState('');
  const open = async () => {
    setError('');
    try {
      setUrl(unwrap(await api.POST('/api/v1/nl2sql/embed-url', { body: {} })).embed_url ?? '');
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <Space direction="vertical" style={{ width: '100%' }}>
      <Typography.Title level={2} style={{ margin: 0, fontSize: 20 }}>
        {t('nl2sql')}
      </Typography.Title>
      {!url && (
        <Button type="primary" onClick={() => void open()}>
          {t('openNl2sql')}
        </Button>
      )}
      {error && <Alert type="error" role="alert" showIcon message={error} />}
      {url && <iframe title={t('nl2sql')} src={url} style={{ width: '100%', height: 'calc(100vh - 180px)', border: '1px solid #e5e7eb' }} />}
    </Space>
  );
}
