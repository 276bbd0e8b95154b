/**
 * The accounts sharing the GPUs, in the cluster view: a compact table (weight, guarantee,
 * limit, demand, GPUs held, share, borrowed or lent, GPU-hours of the last 24 h) and each
 * account's GPUs over time.  Shown only when the cluster has accounts.
 */
import * as React from 'react';

import { accountRows, accountSeries, IAccountRow } from '../accounts';
import { colorMap, parseTime } from '../format';
import { chartWidth, RANGES } from '../timeline';
import { IAccounts } from '../types';
import { Banner } from './Banner';
import { RangeSelect } from './RangeSelect';
import { TimelineChart } from './TimelineChart';

const COLUMNS: ReadonlyArray<[string, string]> = [
  ['Account', 'name'],
  ['Weight', 'weight'],
  ['Guaranteed', 'guaranteed'],
  ['Limit', 'limit'],
  ['Demand', 'demand'],
  ['Held', 'held'],
  ['Share', 'share'],
  ['Borrowed / lent', 'balance'],
  ['GPU-h 24 h', 'gpu-hours']
];

function AccountRow(props: { row: IAccountRow; color?: string }): React.ReactElement {
  const { row } = props;
  return (
    <tr data-testid="nbrunner-account" data-account={row.path}>
      <th scope="row" data-col="name" style={{ paddingLeft: `${6 + row.depth * 14}px` }} title={row.path}>
        {props.color && (
          <span className="nbrunner-Timeline-swatch" style={{ background: props.color }} aria-hidden="true" />
        )}{' '}
        {row.name}
      </th>
      <td data-col="weight">{row.weight}</td>
      <td data-col="guaranteed">{row.guaranteed}</td>
      <td data-col="limit" title={row.limit === '–' ? 'no limit' : undefined}>
        {row.limit}
      </td>
      <td data-col="demand">{row.demand}</td>
      <td data-col="held">{row.held}</td>
      <td data-col="share">{row.share}</td>
      <td data-col="balance" className={`nbrunner-Accounts-${row.balanceKind}`}>
        {row.balance}
      </td>
      <td data-col="gpu-hours" title={`${row.gpuHoursTotal} GPU-hours in total`}>
        {row.gpuHours24h}
      </td>
    </tr>
  );
}

export function AccountsSection(props: {
  view: IAccounts;
  /** Why the accounts could not be read again (the table shows the last read). */
  error: string | null;
  now: number;
  /** The view's width (the chart is drawn at it). */
  width: number;
  /** Index into RANGES. */
  range: number;
  onRange: (range: number) => void;
}): React.ReactElement {
  const { view } = props;
  const rows = accountRows(view);
  const series = accountSeries(view);
  const colors = colorMap(series.map(s => s.id));
  const names = new Map(series.map(s => [s.id, s.name]));
  const range = RANGES[props.range] ?? RANGES[0];
  const loaded = parseTime(view.loaded_at);
  return (
    <section
      className="nbrunner-ClusterView-section"
      aria-labelledby="nbrunner-accounts-heading"
      data-testid="nbrunner-accounts"
    >
      <div className="nbrunner-ClusterView-sectionHead">
        <h3 id="nbrunner-accounts-heading">Accounts</h3>
        <RangeSelect
          id="nbrunner-accounts-range"
          testid="nbrunner-accounts-range"
          value={props.range}
          onChange={props.onRange}
        />
      </div>
      {view.source && (
        <p className="nbrunner-Accounts-source" data-testid="nbrunner-accounts-source">
          From <code>{view.source}</code>
          {loaded !== null && `, read ${new Date(loaded).toLocaleString()}`}
        </p>
      )}
      {props.error && (
        <Banner tone="warn" testid="nbrunner-accounts-error">
          <p>Cannot read the accounts: {props.error}</p>
        </Banner>
      )}
      <div className="nbrunner-JobTable-wrap nbrunner-Accounts-wrap">
        <table className="nbrunner-JobTable nbrunner-Accounts-table" data-testid="nbrunner-accounts-table">
          <thead>
            <tr>
              {COLUMNS.map(([label, key]) => (
                <th key={key} scope="col" data-col={key}>
                  {label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map(row => (
              <AccountRow key={row.path} row={row} color={colors.get(row.path)} />
            ))}
          </tbody>
        </table>
      </div>
      <TimelineChart
        jobs={series}
        colors={colors}
        names={names}
        capacity={view.gpus_total ?? 0}
        now={props.now}
        windowMs={range.ms}
        width={chartWidth(props.width)}
        noun="account"
        testid="nbrunner-accounts-timeline"
        emptyText="No account has held a GPU yet."
      />
    </section>
  );
}
