import { useState } from 'react';
import { Alert, Button, Card, Form, Input, Select, Space, Typography } from 'antd';
import { useNavigate } from 'react-router-dom';
import { ApiError, captcha, login, type Env } from '../lib/api';
import { useI18n } from '../lib/i18n';
import { LangSwitch } from '../LangSwitch';

interface Values {
  tenant: string;
  username: string;
  password: string;
  env: Env;
  captchaCode?: string;
}

export function Login() {
  const { t } = useI18n();
  const nav = useNavigate();
  const [form] = Form.useForm<Values>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [cap, setCap] = useState<{ id: string; image: string } | null>(null);

  const loadCaptcha = async () => {
    try {
      const c = await captcha(form.getFieldValue('env') ?? 'dev');
      setCap({ id: c.captcha_id ?? '', image: c.image ?? '' });
      form.setFieldValue('captchaCode', '');
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const submit = async (v: Values) => {
    setBusy(true);
    setError('');
    try {
      await login({ tenant: v.tenant.trim(), username: v.username.trim(), password: v.password, env: v.env, captchaId: cap?.id, captchaCode: v.captchaCode });
      nav('/chat', { replace: true });
    } catch (e) {
      const err = e as ApiError;
      setError(err.message);
      // A captcha is single use: a new one after every failure once one was shown, and the
      // first one when the server asks for it (captcha mode always, or after failures).
      if (cap || /captcha/i.test(err.message)) await loadCaptcha();
    } finally {
      setBusy(false);
    }
  };

  return (
    <main style={{ minHeight: '100vh', display: 'grid', placeItems: 'center', background: '#f1f5f9' }}>
      <Card style={{ width: 380 }}>
        <Space style={{ width: '100%', justifyContent: 'space-between', marginBottom: 16 }}>
          <Typography.Title level={1} style={{ margin: 0, fontSize: 24 }}>
            ShopMind
          </Typography.Title>
          <LangSwitch />
        </Space>
        <Form form={form} layout="vertical" onFinish={submit} initialValues={{ env: 'dev', tenant: '' }} requiredMark={false}>
          <Form.Item label={t('tenant')} name="tenant" rules={[{ required: true, message: t('required') }]}>
            <Input autoComplete="organization" />
          </Form.Item>
          <Form.Item label={t('username')} name="username" rules={[{ required: true, message: t('required') }]}>
            <Input autoComplete="username" />
          </Form.Item>
          <Form.Item label={t('password')} name="password" rules={[{ required: true, message: t('required') }]}>
            <Input.Password autoComplete="current-password" />
          </Form.Item>
          {cap && (
            <Form.Item label={t('captcha')} required>
              <Space>
                <Form.Item name="captchaCode" noStyle rules={[{ required: true, message: t('required') }]}>
                  <Input aria-label={t('captcha')} inputMode="numeric" style={{ width: 140 }} />
                </Form.Item>
                <button type="button" onClick={loadCaptcha} style={{ border: 0, padding: 0, background: 'none', cursor: 'pointer' }} aria-label={t('captchaImage')}>
                  <img src={cap.image} alt={t('captchaImage')} height={40} data-testid="captcha-image" />
                </button>
              </Space>
            </Form.Item>
          )}
          <Form.Item label={t('environment')} name="env">
            <Select
              aria-label={t('environment')}
              options={[
                { value: 'dev', label: 'dev' },
                { value: 'local', label: 'local' },
                { value: 'test', label: 'test' },
              ]}
            />
          </Form.Item>
          {error && <Alert type="error" role="alert" message={error} style={{ marginBottom: 16 }} showIcon />}
          <Button type="primary" htmlType="submit" block loading={busy}>
            {t('signIn')}
          </Button>
        </Form>
      </Card>
    </main>
  );
}
