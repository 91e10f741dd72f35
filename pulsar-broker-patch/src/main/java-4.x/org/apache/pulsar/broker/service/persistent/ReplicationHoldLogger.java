/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.pulsar.broker.service.persistent;

import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.Position;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link ReplicationHoldLog} with SLF4J, as the 4.x replicator logs: the replicator's id leads each line. */
public class ReplicationHoldLogger implements ReplicationHoldLog {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicationRetryBackoff.class);

    private final String replicatorId;
    private final String remoteCluster;

    public ReplicationHoldLogger(String replicatorId, String remoteCluster) {
        this.replicatorId = replicatorId;
        this.remoteCluster = remoteCluster;
    }

    @Override
    public void held(Hold hold, long maxDelayMillis) {
        LOG.warn("[{}] Replication to cluster {} is held at source position {}: the remote refused it ({}). It is"
                + " sent again after {} ms, then with a delay doubling up to {} s, one message at a time; the"
                + " messages after it wait behind it. Remove the cause on the remote cluster (for example raise its"
                + " topic-level max message size), or give the message up: 'topics skip' on the replicator cursor,"
                + " then unload the topic on the remote cluster", replicatorId, remoteCluster, hold.held(),
                hold.reason(), hold.delayMillis(), TimeUnit.MILLISECONDS.toSeconds(maxDelayMillis));
    }

    @Override
    public void stillHeld(Hold hold, long intervalMillis) {
        LOG.warn("[{}] Replication to cluster {} still held at source position {} for {} s: {} attempt(s), {}"
                + " refusal(s) in the last {} s, next attempt in {} ms, last reason: {}", replicatorId,
                remoteCluster, hold.held(), TimeUnit.MILLISECONDS.toSeconds(hold.heldMillis()), hold.attempts(),
                hold.refusals(), TimeUnit.MILLISECONDS.toSeconds(intervalMillis), hold.delayMillis(), hold.reason());
    }

    @Override
    public void refusedAgain(Hold hold) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("[{}] Replication to cluster {} held at {}: attempt {}, next in {} ms ({})", replicatorId,
                    remoteCluster, hold.held(), hold.attempts(), hold.delayMillis(), hold.reason());
        }
    }

    @Override
    public void resumed(Position stored, Position held, long heldMillis, int attempts) {
        LOG.info("[{}] Replication to cluster {} resumed: the remote stored source position {} (held at {} for {} ms,"
                + " {} attempt(s))", replicatorId, remoteCluster, stored, held, heldMillis, attempts);
    }

    @Override
    public void released(Position held, String why) {
        LOG.info("[{}] Replication to cluster {} no longer held at {}: {}", replicatorId, remoteCluster, held, why);
    }

    @Override
    public void droppedAfterStop() {
        LOG.info("[{}] A resend to cluster {} came due after the replicator stopped: dropped", replicatorId,
                remoteCluster);
    }

    @Override
    public void retryFailed(Throwable cause) {
        LOG.error("[{}] A resend to cluster {} failed to start", replicatorId, remoteCluster, cause);
    }
}
