import { Segmented } from 'antd';
import { useI18n } from './lib/i18n';

export function LangSwitch() {
  const { lang, setLang, t } = useI18n();
  return (
    <Segmented
      aria-label={t('language')}
      size="small"
      value={lang}
      onChange={(v) => setLang(v as 'en' | 'zh')}
      options={[
        { label: 'English', value: 'en' },
        { label: '中文', value: 'zh' },
      ]}
    />
  );
}
