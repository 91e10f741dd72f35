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
package org.apache.pulsar.client.impl;

import org.apache.pulsar.client.api.PulsarClientException;

/**
 * A replicated message the remote cluster did not store (#26113): it rejected the message before its
 * deduplication check, stored later ones, and then answered the resend with a duplicate receipt
 * ({@code -1/-1}). The message is still only on the source cluster; the replicator must not delete it there.
 *
 * <p>Deliberately a direct subclass of {@link PulsarClientException}: the broker's replicator treats
 * {@code InvalidMessageException} (and its subclasses) as "done, delete the source entry".
 */
public class GeoReplicationUnconfirmedException extends PulsarClientException {
    private static final long serialVersionUID = 1L;

    private final long sourceLedgerId;
    private final long sourceEntryId;

    public GeoReplicationUnconfirmedException(String topic, String producerName, long sourceLedgerId,
                                              long sourceEntryId) {
        super(String.format("[%s] [%s] The remote cluster rejected source entry %d:%d before its deduplication"
                + " check, then dropped its resend as a duplicate: it is not stored there", topic, producerName,
                sourceLedgerId, sourceEntryId));
        this.sourceLedgerId = sourceLedgerId;
        this.sourceEntryId = sourceEntryId;
    }

    public long getSourceLedgerId() {
        return sourceLedgerId;
    }

    public long getSourceEntryId() {
        return sourceEntryId;
    }
}
