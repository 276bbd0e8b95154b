/** Free/total GPUs, hosts and policy, at the top of the Jobs panel. */
import * as React from 'react';

import { ICluster } from '../types';

export function ClusterSummary(props: { cluster: ICluster }): React.ReactElement {
  const { cluster } = props;
  const hosts = (cluster.hosts ?? []).length;
  return (
    <div
      className="nbrunner-ClusterSummary"
      data-testid="nbrunner-cluster-summary"
      aria-label="Cluster summary"
    >
      <span>
        <strong data-testid="nbrunner-gpus-free">{cluster.gpus_free}</strong> of{' '}
        <strong data-testid="nbrunner-gpus-total">{cluster.gpus_total}</strong> GPUs
        free
      </span>
      <span>
        {hosts} host{hosts === 1 ? '' : 's'}
      </span>
      <span>
        policy <strong data-testid="nbrunner-policy">{cluster.policy}</strong>
      </span>
    </div>
  );
}
